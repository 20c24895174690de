// Node's http.request and https.request ignore HTTP(S)_PROXY, and so does every library that uses
// Node's global agents (got, node-fetch, superagent...). These global agents send what they carry
// through the proxy the environment names: a plain request in absolute form, TLS through a CONNECT
// tunnel, with the proxy URL's credentials when it has some (capsem record's has, the guest's has
// none). Destinations in NO_PROXY go direct, matched as undici's EnvHttpProxyAgent matches them,
// so fetch and these agree. Core modules only, and CommonJS: the preload that loads this is
// loaded with --require, before any ES module, in every thread.
'use strict';
const http = require('node:http');
const https = require('node:https');
const { syncBuiltinESMExports } = require('node:module');
const net = require('node:net');
const tls = require('node:tls');

/** The first of these variables that holds an http:// proxy URL; a proxy spoken to over TLS is not handled here. */
function proxyFrom(...names) {
  for (const name of names) {
    const value = process.env[name];
    if (!value) continue;
    try {
      const url = new URL(value);
      return url.protocol === 'http:' ? url : null;
    } catch {
      return null;
    }
  }
  return null;
}

/** A host as a URL spells it: IPv6 in brackets, lower case (how undici compares NO_PROXY entries). */
function urlHost(host) {
  const bare = String(host).replace(/^\[|\]$/g, '').toLowerCase();
  return net.isIPv6(bare) ? `[${bare}]` : bare;
}

function inNoProxy(host, port) {
  const value = process.env.no_proxy ?? process.env.NO_PROXY ?? '';
  if (value === '*') return true;
  for (const entry of value.split(/[,\s]/)) {
    if (!entry) continue;
    const parsed = entry.match(/^(.+):(\d+)$/);
    const name = (parsed ? parsed[1] : entry).toLowerCase();
    if (parsed && Number(parsed[2]) !== port) continue;
    if (/^[.*]/.test(name) ? host.endsWith(name.replace(/^\*/, '')) : host === name) return true;
  }
  return false;
}

function proxyPort(proxy) {
  return Number(proxy.port) || 80;
}

/**
 * Whether a request skips the proxy: a unix socket, a NO_PROXY destination, or the proxy itself
 * (a program that speaks to the proxy by hand already addresses it; passing that through the
 * proxy again would send the proxy a request for itself).
 */
function goesDirect(proxy, options, port) {
  if (options.socketPath) return true;
  const host = urlHost(options.host ?? 'localhost');
  if (host === urlHost(proxy.hostname) && port === proxyPort(proxy)) return true;
  return inNoProxy(host, port);
}

function authorization(proxy) {
  if (!proxy.username && !proxy.password) return null;
  return `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`;
}

/** Bytes of a proxy's answer to CONNECT read before it is taken for garbage. */
const MAX_CONNECT_ANSWER = 16 * 1024;

/** A socket to the proxy with a CONNECT tunnel to host:port open on it. */
function openTunnel(proxy, host, port) {
  return new Promise((resolve, reject) => {
    const authority = `${urlHost(host)}:${port}`;
    const auth = authorization(proxy);
    const socket = net.connect(proxyPort(proxy), urlHost(proxy.hostname).replace(/^\[|\]$/g, ''));
    let answer = Buffer.alloc(0);
    const settle = (err) => {
      socket.off('readable', read);
      socket.off('error', settle);
      socket.off('end', ended);
      if (err) {
        socket.destroy();
        reject(err);
      } else resolve(socket);
    };
    const ended = () => settle(new Error(`the proxy closed the connection before answering CONNECT ${authority}`));
    // Read, not 'data': the socket must stay paused so nothing after the answer is lost before TLS takes it.
    function read() {
      let chunk;
      while ((chunk = socket.read()) !== null) answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf('\r\n\r\n');
      if (end < 0) {
        if (answer.length > MAX_CONNECT_ANSWER) settle(new Error(`the proxy's answer to CONNECT ${authority} has no end of headers`));
        return;
      }
      const status = answer.subarray(0, answer.indexOf('\r\n')).toString('latin1');
      const rest = answer.subarray(end + 4);
      if (!/^HTTP\/1\.[01] 200[ \r]?/.test(status)) {
        const said = rest.toString('utf8').trim().slice(0, 1000);
        return settle(new Error(`the proxy refused CONNECT ${authority}: ${status}${said ? `: ${said}` : ''}`));
      }
      // TLS has the client speak first: a proxy that sends more after 200 is not a tunnel.
      if (rest.length > 0) return settle(new Error(`the proxy sent data before the TLS handshake on CONNECT ${authority}`));
      settle(null);
    }
    socket.on('readable', read);
    socket.once('error', settle);
    socket.once('end', ended);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}\r\n`);
  });
}

const httpsProxy = proxyFrom('https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY');
const httpProxy = proxyFrom('http_proxy', 'HTTP_PROXY');

// Both agents take the options Node's take and no more: a request with `agent: false` gets a new
// agent of the global agent's class, made with none, and its fresh connection goes through the
// proxy too.

/** https: TLS to the destination inside a tunnel through the proxy, pooled per destination as usual. */
class TunnellingAgent extends https.Agent {
  proxy = httpsProxy;

  createConnection(options, callback) {
    const port = Number(options.port) || 443;
    // Without a callback (a caller outside Node's own agent code) the socket is due at once: direct.
    if (typeof callback !== 'function' || goesDirect(this.proxy, options, port)) return super.createConnection(options, callback);
    openTunnel(this.proxy, options.host, port).then(
      (socket) => callback(null, tls.connect({ ...options, socket })),
      (err) => callback(err),
    );
    return undefined;
  }
}

/** http: the request line in absolute form, sent to the proxy. */
class ForwardingAgent extends http.Agent {
  proxy = httpProxy;

  addRequest(req, options) {
    const port = Number(options.port) || 80;
    // A path not starting with / is already absolute form: the program speaks to a proxy of its own.
    if (goesDirect(this.proxy, options, port) || !req.path.startsWith('/')) return super.addRequest(req, options);
    req.path = `http://${urlHost(options.host ?? 'localhost')}${port === 80 ? '' : `:${port}`}${req.path}`;
    const auth = authorization(this.proxy);
    if (req._header) {
      // The head is already written out (an Expect header, or headers given as an array): rewrite it.
      const firstLineEnd = req._header.indexOf('\r\n') + 2;
      req._header = `${req.method} ${req.path} HTTP/1.1\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}${req._header.slice(firstLineEnd)}`;
    } else if (auth) {
      req.setHeader('Proxy-Authorization', auth);
    }
    return super.addRequest(req, { ...options, host: urlHost(this.proxy.hostname).replace(/^\[|\]$/g, ''), port: proxyPort(this.proxy) });
  }
}

if (httpsProxy) https.globalAgent = new TunnellingAgent({ ...https.globalAgent.options });
if (httpProxy) http.globalAgent = new ForwardingAgent({ ...http.globalAgent.options });
// `import { globalAgent } from 'node:https'` elsewhere sees these too.
syncBuiltinESMExports();
