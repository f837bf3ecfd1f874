"""cudaenv uninstall: edits the shell startup lines the plan names, keeping FILE.cudaenv-backup.

Run as: python3 -c SOURCE FILE N ACTION OLD NEW ... (cudaenv/toolkit/uninstall/rcfiles.py loads this file)."""
import os, shutil, sys
path, ops = sys.argv[1], sys.argv[2:]
if len(ops) % 4:
    sys.exit("cudaenv edit: arguments must come in fours: LINE ACTION OLD NEW")
with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
    lines = fh.read().split("\n")
plain = [l[:-1] if l.endswith("\r") else l for l in lines]
todo = {}
for i in range(0, len(ops), 4):
    n, action, old, new = int(ops[i]), ops[i + 1], ops[i + 2], ops[i + 3]
    if 0 < n <= len(lines) and plain[n - 1] == old:
        todo[n] = None if action == "remove" else new + ("\r" if lines[n - 1].endswith("\r") else "")
    elif old in plain:
        sys.exit("cudaenv edit: %s line %d no longer reads %r (the file changed since the plan was made); nothing was changed" % (path, n, old))
if not todo:
    print("nothing to do in %s: the lines are already gone" % path)
    sys.exit(0)
backup = path + ".cudaenv-backup"
k = 0
while os.path.lexists(backup):
    k += 1
    backup = "%s.cudaenv-backup.%d" % (path, k)
shutil.copy2(path, backup)
out = [todo.get(i + 1, line) for i, line in enumerate(lines) if not (i + 1 in todo and todo[i + 1] is None)]
with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
    fh.write("\n".join(out))
print("edited %s (%d line(s)); backup: %s" % (path, len(todo), backup))
