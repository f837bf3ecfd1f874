"""`index.client.unreachable` (asked by `cudaenv fix` before pip runs) decides from what happened, not from its
own words: FetchError says whether the server answered (``answered``)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cudaenv.index.client import unreachable


class _NotFound(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_server_that_answers_an_error_is_reachable():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        assert unreachable("http://127.0.0.1:%d/whl/cu126/" % httpd.server_address[1], seconds=10.0) is None
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_words_in_the_url_do_not_make_a_server_reachable():
    # no time left: nothing was asked of the server; a URL holding "inflates" once read as an answer (None)
    url = "http://127.0.0.1:9/inflates/"
    why = unreachable(url, seconds=0.0)
    assert why is not None and url in why
