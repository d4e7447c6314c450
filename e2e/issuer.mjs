// A real OAuth 2 authorization server for the end-to-end test:
// oauth2-mock-server 9.3.0 over HTTPS, issuing RS256 JWT access tokens shaped
// as RFC 9068 asks (typ at+jwt; aud, scope, sub, client_id).
//
//   node issuer.mjs KEY.pem CERT.pem
//
// Listens on a free port of 127.0.0.1 and prints its issuer URL
// (https://127.0.0.1:PORT) on stdout once listening. Exits on SIGTERM/SIGINT.
//
// Tokens come from its token endpoint with the client-credentials grant:
//   POST /token  grant_type=client_credentials&scope=...&aud=...
// plus, read by the hook below, sub= and client_id= (the token's sub and
// client_id; defaults e2e-user and e2e-client) and expired=1 (exp an hour
// ago). The mock authenticates no client: it is a test issuer only.
//
// Two quirks of oauth2-mock-server
// are handled here: on 127.* it names itself https://localhost:PORT, so the
// issuer URL is set after start; and it serves no RFC 8414 metadata, so
// /.well-known/oauth-authorization-server is added (the verifier tries it
// first, then falls back to /.well-known/openid-configuration).
import { OAuth2Server, Events } from 'oauth2-mock-server';

const [keyPath, certPath] = process.argv.slice(2);
if (!keyPath || !certPath) {
  console.error('usage: node issuer.mjs KEY.pem CERT.pem');
  process.exit(2);
}

const server = new OAuth2Server(keyPath, certPath);
await server.issuer.keys.generate('RS256');
server.service.addRoute('GET', '/.well-known/oauth-authorization-server', (req, res) =>
  server.service.openidConfigurationHandler(req, res),
);
server.service.on(Events.BeforeTokenSigning, (token, req) => {
  const body = req.body ?? {};
  token.header.typ = 'at+jwt';
  token.payload.sub = typeof body.sub === 'string' ? body.sub : 'e2e-user';
  token.payload.client_id = typeof body.client_id === 'string' ? body.client_id : 'e2e-client';
  if (body.expired === '1') {
    const now = Math.floor(Date.now() / 1000);
    Object.assign(token.payload, { iat: now - 7200, nbf: now - 7200, exp: now - 3600 });
  }
});
await server.start(0, '127.0.0.1');
server.issuer.url = `https://127.0.0.1:${server.address().port}`;
console.log(server.issuer.url);

// Exit at once: a graceful stop would wait for keep-alive connections.
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
