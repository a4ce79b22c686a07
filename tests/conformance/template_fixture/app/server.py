# Served by the conformance template (template_build.mjs): answers GET with a greeting built from
# the template's ENV and a file its build wrote.
import http.server
import os


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open("/opt/app/built.txt") as f:
            built = f.read().strip()
        body = ("%s %s %s" % (os.environ.get("GREETING", "?"), built, os.getcwd())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()
