// The deck's clock in a Node program on a virtual clock (rehearse, redteam, replay --faults).
// The program that serves the deck (foreign.py) loads this with NODE_OPTIONS=--require.
//
// A timer of the program (setTimeout, and setTimeout of node:timers and node:timers/promises)
// fires at its virtual deadline. While an HTTP request of the program is in flight (fetch or
// node:http, counted by their diagnostics channels), time passes as it really does; once none
// is and only timers are left, time jumps to the next one's deadline at once. So a wait of the
// program, an SDK's retry sleep with it, takes no real time, and each wait is appended (in
// milliseconds, one per line) to the file FAULTDECK_SLEPT names: the proxy puts it on the
// deck's clock before it relays the program's next request, and the deck judges the waits the
// program really made. Date and performance.now read the virtual time.
//
// A timer of 1 ms or less is Node's own, and time does not jump before it fires. A program that waits on something else
// than its HTTP calls (a child process, a socket of its own) sees its timers fire once it is
// idle, as if that took no time.
"use strict";

const fs = require("node:fs");
const diagnostics = require("node:diagnostics_channel");
const timers = require("node:timers");
const timersPromises = require("node:timers/promises");
const { syncBuiltinESMExports } = require("node:module");

const slept = process.env.FAULTDECK_SLEPT;
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setImmediate: globalThis.setImmediate,
  Date: globalThis.Date,
  now: performance.now.bind(performance),
};
const MAX_DELAY = 2 ** 31 - 1;

let skew = 0; // how far, in ms, the virtual time is ahead of the real one
let inFlight = 0; // the program's HTTP requests not yet answered to their end
let order = 0; // timers due at the same moment fire in the order they were set
let waking = false;
let settled = 0; // when the program last did something but wait: a request ended, time jumped
const pending = new Set();
const soon = new Set(); // the real timers of 1 ms or less not yet fired: no jump before them

const monotonic = () => real.now() + skew;

// Jump to the timer's deadline. The program waited for it from when it was set, or from
// when it last did something else, if later: that wait is what the file is told.
function jump(timer) {
  const ahead = timer.deadline - monotonic();
  if (ahead <= 0) return;
  const waited = timer.deadline - Math.max(timer.armed, settled);
  skew += ahead;
  settled = monotonic();
  if (slept) fs.appendFileSync(slept, `${waited}\n`);
}

class Timeout {
  constructor(callback, delay, args) {
    this.callback = callback;
    this.args = args;
    this.delay = delay;
    this.order = order++;
    this.refed = true;
    this.handle = null;
    this.arm();
  }

  arm() {
    if (this.handle !== null) real.clearTimeout(this.handle);
    this.armed = monotonic();
    this.deadline = this.armed + this.delay;
    pending.add(this);
    this.handle = real.setTimeout(() => fire([this]), this.delay);
    if (!this.refed) this.handle.unref();
    wake();
  }

  ref() {
    this.refed = true;
    this.handle?.ref();
    wake();
    return this;
  }

  unref() {
    this.refed = false;
    this.handle?.unref();
    return this;
  }

  hasRef() {
    return this.refed;
  }

  refresh() {
    if (pending.has(this)) this.arm();
    return this;
  }

  close() {
    cancel(this);
    return this;
  }

  [Symbol.toPrimitive]() {
    return this.handle === null ? NaN : +this.handle;
  }
}

function cancel(timer) {
  soon.delete(timer);
  if (timer instanceof Timeout) {
    pending.delete(timer);
    real.clearTimeout(timer.handle);
  } else if (typeof timer === "number" || typeof timer === "string") {
    for (const t of pending) if (+t === +timer) return cancel(t);
    real.clearTimeout(timer);
  } else {
    real.clearTimeout(timer);
  }
}

function fire(due) {
  for (const timer of due) {
    if (!pending.delete(timer)) continue;
    real.clearTimeout(timer.handle);
    timer.callback(...timer.args);
  }
}

function wake() {
  if (waking || inFlight > 0 || pending.size === 0) return;
  waking = true;
  // Two turns of the loop: what the program does next (a request it is about to send, I/O
  // already answered) comes first.
  real.setImmediate(() => real.setImmediate(idle));
}

function idle() {
  waking = false;
  if (inFlight > 0 || soon.size > 0) return;
  let next = null;
  for (const t of pending) {
    if (t.refed && (next === null || t.deadline < next.deadline)) next = t;
  }
  if (next === null) return;
  jump(next);
  const now = monotonic();
  const due = [...pending].filter((t) => t.deadline <= now);
  fire(due.sort((a, b) => a.deadline - b.deadline || a.order - b.order));
  wake();
}

function setTimeoutVirtual(callback, delay, ...args) {
  const ms = Number(delay);
  if (typeof callback !== "function") return real.setTimeout(callback, delay, ...args);
  if (!(ms > 1 && ms <= MAX_DELAY)) {
    const handle = real.setTimeout(() => {
      soon.delete(handle);
      callback(...args);
      wake();
    }, delay);
    soon.add(handle);
    return handle;
  }
  return new Timeout(callback, ms, args);
}

function sleepVirtual(delay, value, options = {}) {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeoutVirtual(() => resolve(value), delay);
    if (options.ref === false) timer.unref?.();
    signal?.addEventListener(
      "abort",
      () => {
        cancel(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

function started() {
  inFlight++;
}

function ended() {
  inFlight = Math.max(0, inFlight - 1);
  settled = monotonic();
  wake();
}

diagnostics.subscribe("undici:request:create", started);
diagnostics.subscribe("undici:request:trailers", ended);
diagnostics.subscribe("undici:request:error", ended);
diagnostics.subscribe("http.client.request.start", ({ request }) => {
  started();
  request.once("close", ended);
});

const VirtualDate = new Proxy(real.Date, {
  construct(target, args, newTarget) {
    return Reflect.construct(target, args.length ? args : [target.now() + skew], newTarget);
  },
  apply(target) {
    return new target(target.now() + skew).toString();
  },
  get(target, name, receiver) {
    return name === "now" ? () => target.now() + skew : Reflect.get(target, name, receiver);
  },
});

globalThis.setTimeout = timers.setTimeout = setTimeoutVirtual;
globalThis.clearTimeout = timers.clearTimeout = cancel;
timersPromises.setTimeout = sleepVirtual;
globalThis.Date = VirtualDate;
performance.now = monotonic;
syncBuiltinESMExports();
if (slept) fs.appendFileSync(slept, "node\n"); // the proxy knows the program keeps the clock
