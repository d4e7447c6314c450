// RecordingTransport wraps an MCP SDK transport: it records every message
// the client sends and receives (the server's own requests included), so the
// tests can check the exchange on the wire, and collects transport errors
// (a non-JSON line on stdout, for one). Shared by interop.mjs and elicit.mjs.
export class RecordingTransport {
  constructor(inner) {
    this.inner = inner;
    this.sent = [];
    this.received = [];
    this.errors = [];
  }
  async start() {
    this.inner.onmessage = (msg, extra) => {
      this.received.push(msg);
      this.onmessage?.(msg, extra);
    };
    this.inner.onerror = (err) => {
      this.errors.push(err);
      this.onerror?.(err);
    };
    this.inner.onclose = () => this.onclose?.();
    await this.inner.start();
  }
  async send(msg, options) {
    this.sent.push(msg);
    await this.inner.send(msg, options);
  }
  async close() {
    await this.inner.close();
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  setProtocolVersion(v) {
    this.inner.setProtocolVersion?.(v);
  }
}
