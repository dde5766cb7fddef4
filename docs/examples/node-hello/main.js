#!/usr/bin/env node
// Greetings from hello: a Hologram plugin in plain Node.js, no SDK and no npm packages. It speaks the plugin protocol,
// version 1, exactly as docs/protocol.md describes it: JSON-RPC 2.0, one JSON object per line, on stdin/stdout.
"use strict";

const readline = require("node:readline");

const PROTOCOL = 1; // docs/protocol.md, section 6: anything else is refused
const FACILITY = "hello.greetings"; // what plugin.toml provides (without its version)
const TOOL = "hello_greet";

let config = { greeting: "Hello" }; // [config] of plugin.toml, with the user's settings over it (initialize)

// stdout carries protocol messages only (section 1); the log is stderr, which the kernel keeps in its log file.
function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}
const log = (...parts) => console.error(...parts);

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function toolError(message) {
  return { content: `error: ${message}`, is_error: true }; // a result the model reads as an error (section 7)
}

// The kernel validates arguments against the tool's schema before each call; a plugin still checks them, so a
// call from anywhere else gets an error result instead of a crash.
function greetArguments(args) {
  const unknown = Object.keys(args).filter((key) => key !== "name" && key !== "times");
  if (unknown.length > 0) return `unknown argument '${unknown[0]}'`;
  if (typeof args.name !== "string" || args.name.length === 0) return "'name' must be a non-empty string";
  if (args.times !== undefined && !(Number.isInteger(args.times) && args.times >= 1 && args.times <= 3)) {
    return "'times' must be an integer from 1 to 3";
  }
  return null;
}

function greet(name, times = 1) {
  return Array(times).fill(`${config.greeting}, ${name}!`).join(" ");
}

const handlers = {
  initialize(params) {
    if (params.protocol !== PROTOCOL) {
      throw new RpcError(-32001, `this plugin speaks protocol ${PROTOCOL}, the kernel offered ${params.protocol}`);
    }
    config = { ...config, ...(params.config || {}) };
    log(`hello: kernel ${params.kernel_version}, data in ${params.data_dir}`);
    // Ready once the answer is out: a facility/ready after it, on the same ordered stream (section 6, step 3).
    setImmediate(() => send({ method: "facility/ready", params: { facility: FACILITY } }));
    return { protocol: PROTOCOL, sdk: "hello-node/0.1.0", tools: [], stages: [], methods: { [FACILITY]: ["greet"] } };
  },
  "tool/invoke"(params) {
    if (params.name !== TOOL) throw new RpcError(-32601, `no tool '${params.name}'`);
    const args = params.arguments || {};
    const problem = greetArguments(args);
    if (problem) return toolError(`bad arguments for ${TOOL}: ${problem}`);
    return { content: greet(args.name, args.times) };
  },
  "facility/call"(params) {
    if (params.facility !== FACILITY || params.method !== "greet") {
      throw new RpcError(-32601, `no method '${params.method}' on '${params.facility}'`);
    }
    const args = params.params || {};
    if (typeof args.name !== "string") throw new RpcError(-32602, "greet: 'name' must be a string");
    return { text: greet(args.name) };
  },
  shutdown() {
    setImmediate(() => process.exit(0)); // answer first, then exit promptly (section 6, step 5)
    return {};
  },
};

function handle(line) {
  if (line.trim() === "") return; // blank lines are tolerated (section 1)
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    send({ id: null, error: { code: -32700, message: "parse error" } });
    return;
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    send({ id: null, error: { code: -32600, message: "invalid request" } });
    return;
  }
  if (typeof message.method !== "string") return; // an answer to a request of ours: this plugin sends none
  const handler = handlers[message.method];
  const isRequest = message.id !== undefined && message.id !== null;
  if (!isRequest) return; // notifications ($/cancel, facility/status, …) need no answer; unknown ones are ignored
  if (!handler) {
    send({ id: message.id, error: { code: -32601, message: `no method '${message.method}'` } });
    return;
  }
  try {
    send({ id: message.id, result: handler(message.params || {}) });
  } catch (error) {
    const code = error instanceof RpcError ? error.code : -32603;
    send({ id: message.id, error: { code, message: String(error.message || error) } });
  }
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", handle);
input.on("close", () => process.exit(0)); // the kernel went away
