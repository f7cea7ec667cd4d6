// loopback.cjs is a node preload (`node -r ./loopback.cjs server.js`) that
// keeps a test server off every interface but loopback: MCP reference
// servers call listen(PORT) with no host, which binds all interfaces, and
// have no option to change that. Every net.Server listen without a host, or
// with a wildcard host, is rewritten to 127.0.0.1. Once a server listens,
// one line "toold-loopback: listening on 127.0.0.1:PORT" goes to stderr, so
// a test that passed PORT=0 learns the port the kernel chose.
"use strict";
const net = require("node:net");

const wildcard = new Set(["", "0.0.0.0", "::", "[::]", "::0"]);
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    // listen(options[, cb]); a path (unix socket) or a handle is left alone.
    if (first.path === undefined && first.handle === undefined && first.fd === undefined &&
        (first.host === undefined || wildcard.has(String(first.host)))) {
      args[0] = { ...first, host: "127.0.0.1" };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, cb])
    if (typeof args[1] !== "string" || wildcard.has(args[1])) {
      const rest = typeof args[1] === "string" ? args.slice(2) : args.slice(1);
      args = [Number(first), "127.0.0.1", ...rest];
    }
  } else if (first === undefined || typeof first === "function") {
    // listen([cb]): a random port on all interfaces.
    args = [0, "127.0.0.1", ...args.filter((a) => typeof a === "function")];
  }
  this.once("listening", () => {
    const a = this.address();
    if (a && typeof a === "object") {
      process.stderr.write(`toold-loopback: listening on ${a.address}:${a.port}\n`);
    }
  });
  return listen.apply(this, args);
};
