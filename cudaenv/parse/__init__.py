"""Pure parsers: text or bytes in, values out. No I/O, no Host, never an exception for any input.

One copy of each parser: the probes call these on what they read from the machine, and the readers of
pasted outputs (``cudaenv explain``) and reports call the very same functions.
"""
