// node-web: a Node HTTP app with no npm dependencies (node's own http module), the node-web
// template's in-sandbox server. Started by the template's start_cmd (as root on the local
// platform); when it starts as root it drops to NODE_WEB_USER (default `user`) before it
// listens, so it serves as E2B's template user. Port NODE_WEB_PORT (default 3000), all
// interfaces.
//
//   GET  /            200 text/html: a small page naming the app
//   GET  /health      200 {"status": "ok"}
//   GET  /api/info    200 {name, node, pid, uid, gid, user, greeting, uptime_s}; greeting is
//                     NODE_WEB_GREETING from the environment (the recipe's env step), or null
//   POST /api/echo    200 {method, content_type, length, body}: body is the parsed JSON when
//                     the request is application/json, else the text; a body that claims JSON
//                     and is not is 400 {"error": "bad_request", "message": ...}; over 1 MiB 413
//   anything else     404 {"error": "not_found", ...}; a known path with another method 405
//                     {"error": "method_not_allowed"} with Allow
'use strict';
const http = require('http');
const os = require('os');

const PORT = Number(process.env.NODE_WEB_PORT || 3000);
const RUN_AS = process.env.NODE_WEB_USER || 'user';
const MAX_BODY = 1024 * 1024;

if (process.getuid() === 0) {
  process.initgroups(RUN_AS, RUN_AS);
  process.setgid(RUN_AS);
  process.setuid(RUN_AS);
}
const USER = os.userInfo();
process.env.HOME = USER.homedir;

function json(res, status, obj, headers) {
  const data = JSON.stringify(obj);
  res.writeHead(status, Object.assign({
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(data),
  }, headers || {}));
  res.end(data);
}

const PAGE = '<!doctype html>\n<html><head><meta charset="utf-8"><title>node-web</title></head>\n'
  + '<body><h1>node-web</h1><p>served by Node ' + process.version + ' inside the sandbox</p>'
  + '</body></html>\n';

const ROUTES = {
  '/': { GET: (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': Buffer.byteLength(PAGE) });
    res.end(PAGE);
  } },
  '/health': { GET: (req, res) => json(res, 200, { status: 'ok' }) },
  '/api/info': { GET: (req, res) => json(res, 200, {
    name: 'node-web', node: process.version, pid: process.pid, uid: process.getuid(),
    gid: process.getgid(), user: USER.username,
    greeting: process.env.NODE_WEB_GREETING === undefined ? null : process.env.NODE_WEB_GREETING,
    uptime_s: process.uptime(),
  }) },
  '/api/echo': { POST: (req, res) => {
    const chunks = [];
    let size = 0;
    let over = false;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) { over = true; return; }
      chunks.push(c);
    });
    req.on('end', () => {
      if (over) {
        return json(res, 413, { error: 'payload_too_large', message: `body over ${MAX_BODY} bytes` });
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const ctype = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
      let body = text;
      if (ctype === 'application/json') {
        try {
          body = JSON.parse(text);
        } catch (e) {
          return json(res, 400, { error: 'bad_request', message: `the body is not JSON: ${e.message}` });
        }
      }
      json(res, 200, { method: req.method, content_type: ctype || null, length: size, body });
    });
  } },
};

const server = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://localhost').pathname;
  const route = ROUTES[path];
  if (!route) return json(res, 404, { error: 'not_found', message: `no route ${req.method} ${path}` });
  const handler = route[req.method];
  if (!handler) {
    const allow = Object.keys(route).join(', ');
    return json(res, 405, { error: 'method_not_allowed', message: `${req.method} is not allowed on ${path}` },
      { Allow: allow });
  }
  handler(req, res);
});
server.listen(PORT, '::', () => {
  console.error(`node-web: listening on port ${PORT} as ${USER.username} (node ${process.version})`);
});
