'use strict';
// The preview server of the skill-tools fixture: documents under docs/ are readable only through
// links signed with HMAC-SHA256 over method, path and expiry (Unix seconds).
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const path = require('path');

const SECRET = process.env.PREVIEW_SECRET || '';
const PORT = Number(process.env.PORT || 3000);
const MAX_TTL = 3600;
if (SECRET.length < 32) {
  console.error('PREVIEW_SECRET must be set (at least 32 characters)');
  process.exit(2);
}
if (!Number.isInteger(PORT) || PORT < 1 || PORT > 65535) {
  console.error('PORT must be 1..65535');
  process.exit(2);
}
const DOCS = path.join(__dirname, 'docs');

function sign(docPath, expires) {
  return crypto.createHmac('sha256', SECRET).update(`GET\n${docPath}\n${expires}`).digest('hex');
}

function send(res, status, body, type) {
  res.writeHead(status, { 'content-type': type || 'application/json', 'cache-control': 'no-store' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

function readDoc(name) {
  if (!/^[a-z0-9-]{1,64}$/.test(name)) return null;
  try {
    return fs.readFileSync(path.join(DOCS, name + '.md'), 'utf8');
  } catch (e) {
    return null;
  }
}

function createLink(req, res) {
  let body = '';
  req.on('data', (c) => {
    body += c;
    if (body.length > 4096) req.destroy();
  });
  req.on('end', () => {
    let o;
    try {
      o = JSON.parse(body || '{}');
    } catch (e) {
      return send(res, 400, { error: 'body must be JSON' });
    }
    const ttl = o.ttl === undefined ? 20 : o.ttl;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL) {
      return send(res, 400, { error: `ttl must be a whole number of seconds 1..${MAX_TTL}` });
    }
    if (typeof o.doc !== 'string' || readDoc(o.doc) === null) {
      return send(res, 404, { error: 'unknown doc' });
    }
    const docPath = `/preview/${o.doc}`;
    const expires = Math.floor(Date.now() / 1000) + ttl;
    const sig = sign(docPath, expires);
    send(res, 201, { path: `${docPath}?expires=${expires}&sig=${sig}`, expires });
  });
}

function preview(url, res) {
  const name = url.pathname.slice('/preview/'.length);
  const expires = url.searchParams.get('expires');
  const sig = url.searchParams.get('sig');
  if (!expires || !sig) return send(res, 403, { error: 'unsigned link' });
  if (!/^[0-9]{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(sig)) {
    return send(res, 403, { error: 'malformed signature' });
  }
  const want = Buffer.from(sign(url.pathname, expires), 'hex');
  if (!crypto.timingSafeEqual(want, Buffer.from(sig, 'hex'))) {
    return send(res, 403, { error: 'bad signature' });
  }
  if (Number(expires) <= Math.floor(Date.now() / 1000)) return send(res, 410, { error: 'link expired' });
  const doc = readDoc(name);
  if (doc === null) return send(res, 404, { error: 'unknown doc' });
  send(res, 200, doc, 'text/markdown; charset=utf-8');
}

http
  .createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    console.log(`${req.method} ${url.pathname}`);
    if (req.method === 'GET' && url.pathname === '/health') return send(res, 200, { ok: true });
    if (req.method === 'POST' && url.pathname === '/links') return createLink(req, res);
    if (req.method === 'GET' && url.pathname.startsWith('/preview/')) return preview(url, res);
    send(res, 404, { error: 'not found' });
  })
  .listen(PORT, '0.0.0.0', () => console.log(`preview server listening on ${PORT}`));
