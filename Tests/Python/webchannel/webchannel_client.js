// A Firestore stream over WebChannel, sending exactly what firebase-js-sdk sends (so a test can run
// one session against Google's emulator and against herald dev, in a real browser). Each request's
// shape is traced to the file it mirrors:
//   SDK   firebase-js-sdk packages/firestore/src/platform/browser/webchannel_connection.ts (openStream)
//   BASE  closure-library closure/goog/labs/net/webchannel/webchannelbase.js
//   REQ   closure-library closure/goog/labs/net/webchannel/channelrequest.js
//   WIRE  closure-library closure/goog/labs/net/webchannel/wirev8.js
//   CORS  closure-library closure/goog/net/rpc/httpcors.js
export class WebChannelStream {
  // rpc: "Listen" or "Write"; longPolling: SDK's experimentalForceLongPolling (CI=1).
  constructor(base, rpc, database, { longPolling = false, headers = {} } = {}) {
    this.url = `${base}/google.firestore.v1.Firestore/${rpc}/channel`; // SDK: urlParts
    this.database = database; // SDK: messageUrlParams.database, on every request
    this.longPolling = longPolling;
    this.headers = headers; // SDK: initMessageHeaders (X-Goog-Api-Client, Content-Type, auth)
    this.nextRid = Math.floor(Math.random() * 100000); // BASE: open_
    this.nextMapId = 0; // BASE: nextMapId_
    this.lastArrayId = -1; // BASE: lastArrayId_
    this.sid = null;
    this.closed = false;
    this.received = [];
    this.view = new ListenView();
    this.waiters = [];
    this.error = null;
    this.forward = Promise.resolve(); // BASE: one forward channel request at a time
    this.aborter = new AbortController(); // REQ: cancel() aborts the XHRs of a closed channel
    this.backChannels = 0;
  }

  params(extra) {
    // BASE: forwardChannelUri_ = VER + messageUrlParams; zx random, t=1 (REQ: xmlHttpPost/xmlHttpGet)
    const p = new URLSearchParams({ VER: '8', database: this.database });
    for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
    p.set('zx', Math.random().toString(36).slice(2));
    p.set('t', '1');
    return p.toString();
  }

  encodeMaps(messages) {
    // WIRE: encodeMessageQueue: count, ofs, then reqN___data__ (sendRawJson: the message as JSON text)
    const first = this.nextMapId;
    this.nextMapId += messages.length;
    const parts = [`count=${messages.length}`, `ofs=${first}`];
    messages.forEach((m, i) => parts.push(`req${i}___data__=${encodeURIComponent(JSON.stringify(m))}`));
    return parts.join('&');
  }

  // REQ: xmlHttpPost sends Content-Type application/x-www-form-urlencoded. BASE:
  // maybeRetryForwardChannel_ — a POST that times out goes again with the same RID and maps (the SDK's
  // timeout is minutes; this client's is seconds, so a test does not wait on a server that holds one).
  async post(query, body, attempts = 4) {
    if (globalThis.webChannelTrace) console.log(`POST ${JSON.stringify(query)} ${body.slice(0, 120)}`);
    const url = `${this.url}?${this.params(query)}`;
    let response;
    try {
      response = await fetch(url, {
        method: 'POST', body, credentials: 'include', signal: AbortSignal.any([this.aborter.signal, AbortSignal.timeout(5000)]),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
    } catch (e) {
      if (this.closed || attempts <= 1) throw e;
      this.retriedPosts = (this.retriedPosts || 0) + 1;
      return this.post(query, body, attempts - 1);
    }
    const text = await response.text();
    if (!response.ok) throw new Error(`POST ${response.status}: ${text}`);
    return WebChannelStream.frames(text).chunks;
  }

  // BASE: open_ — the handshake carries the first message; the SDK encodes its headers in the body
  // (encodeInitMessageHeaders: `headers=` + CORS.generateEncodedHttpHeadersOverwriteParam).
  async open(firstMessage) {
    const rid = this.nextRid++;
    const headerText = Object.entries(this.headers).map(([k, v]) => `${k}:${v}\r\n`).join('');
    let body = this.encodeMaps([firstMessage]);
    if (headerText) body = `headers=${encodeURIComponent(headerText)}&${body}`;
    const chunks = await this.post({ RID: rid, CVER: 22, 'X-HTTP-Session-Id': 'gsessionid' }, body);
    const [id, payload] = chunks[0][0];
    if (payload[0] !== 'c') throw new Error(`handshake answered ${JSON.stringify(chunks)}`);
    this.lastArrayId = id;
    this.sid = payload[1];
    this.backChannelLoop();
  }

  // BASE: makeForwardChannelRequest_ — SID, RID, AID; one request at a time.
  send(message) {
    const body = this.encodeMaps([message]);
    this.forward = this.forward.then(() => this.post({ SID: this.sid, RID: this.nextRid++, AID: this.lastArrayId }, body));
    return this.forward;
  }

  // BASE: startBackChannel_ — GET RID=rpc, SID, AID, CI, TYPE=xmlhttp; again when it completes.
  async backChannelLoop() {
    while (!this.closed) {
      this.backChannels += 1;
      const query = { RID: 'rpc', SID: this.sid, AID: this.lastArrayId, CI: this.longPolling ? 1 : 0, TYPE: 'xmlhttp' };
      let response;
      if (globalThis.webChannelTrace) console.log(`GET ${JSON.stringify(query)}`);
      try {
        response = await fetch(`${this.url}?${this.params(query)}`, { credentials: 'include', signal: this.aborter.signal });
      } catch (e) {
        if (!this.closed) this.fail(`back channel: ${e}`);
        return;
      }
      if (!response.ok) {
        this.fail(`back channel ${response.status}: ${await response.text()}`);
        return;
      }
      // REQ: decodeNextChunks_ — read as the text arrives, frame by frame.
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ done: true }));
        if (done || this.closed) break;
        buffer += decoder.decode(value, { stream: true });
        const { chunks, rest } = WebChannelStream.frames(buffer);
        buffer = rest;
        for (const chunk of chunks) this.deliver(chunk);
      }
    }
  }

  // `LENGTH\nJSON` frames; the length counts UTF-16 code units (JavaScript string length).
  static frames(text) {
    const chunks = [];
    let at = 0;
    for (;;) {
      const newline = text.indexOf('\n', at);
      if (newline < 0) break;
      const size = Number(text.slice(at, newline));
      if (!Number.isInteger(size)) throw new Error(`bad frame length at ${at}: ${text.slice(at, at + 40)}`);
      if (text.length < newline + 1 + size) break;
      chunks.push(JSON.parse(text.slice(newline + 1, newline + 1 + size)));
      at = newline + 1 + size;
    }
    return { chunks, rest: text.slice(at) };
  }

  // BASE: onInput_ — each [id, payload]; "noop" is WebChannel's; SDK: msg.data[0], an error closes.
  deliver(arrays) {
    for (const [id, payload] of arrays) {
      this.lastArrayId = id;
      if (payload[0] === 'noop') continue;
      if (payload[0] === 'close' || payload[0] === 'stop') { this.fail(`server ${payload[0]}`); continue; }
      const message = payload[0];
      const error = message.error || (Array.isArray(message) && message[0] && message[0].error);
      if (error) { this.fail(`${error.status}: ${error.message}`); continue; }
      this.received.push(message);
      this.view.apply(message);
    }
    this.wake();
  }

  fail(reason) {
    this.error = reason;
    this.closed = true;
    this.wake();
  }

  wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  // Waits until `predicate(received)` holds (or the stream fails, or `ms` pass).
  async until(predicate, ms = 15000) {
    const deadline = Date.now() + ms;
    while (!predicate(this.received)) {
      if (this.error) throw new Error(`stream failed: ${this.error}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; received ${JSON.stringify(this.received).slice(-3000)}`);
      await new Promise((resolve) => { this.waiters.push(resolve); setTimeout(resolve, Math.min(left, 200)); });
    }
  }

  // Waits until the client's view at a consistent point (a global NO_CHANGE) satisfies `predicate`.
  async untilView(predicate, ms = 15000) {
    await this.until(() => this.view.snapshot !== null && predicate(this.view.snapshot), ms);
    return this.view.snapshot;
  }

  // BASE: disconnect — TYPE=terminate (sendBeacon or an image GET).
  async close() {
    this.closed = true;
    this.aborter.abort();
    await fetch(`${this.url}?${this.params({ SID: this.sid, RID: this.nextRid++, TYPE: 'terminate' })}`, { credentials: 'include' })
      .catch(() => {});
  }
}

// What a listener sees, as the SDK's WatchChangeAggregator builds it (firebase-js-sdk
// packages/firestore/src/remote/watch_change.ts): each target's documents; a snapshot at each global
// NO_CHANGE (no target ids: every target is consistent at its read time).
export class ListenView {
  constructor() {
    this.targets = new Map(); // id -> Map(name -> fields)
    this.current = new Set();
    this.snapshot = null;
    this.filterMismatches = 0;
  }

  apply(m) {
    if (m.targetChange) {
      const { targetChangeType: type = 'NO_CHANGE', targetIds = [] } = m.targetChange;
      for (const id of targetIds) {
        if (type === 'ADD' && !this.targets.has(id)) this.targets.set(id, new Map()); // a resumed target keeps its documents
        if (type === 'RESET') { this.targets.set(id, new Map()); this.current.delete(id); }
        if (type === 'CURRENT') this.current.add(id);
        if (type === 'REMOVE') { this.targets.delete(id); this.current.delete(id); }
      }
      if (type === 'NO_CHANGE' && targetIds.length === 0) this.snapshot = this.take();
    } else if (m.documentChange) {
      const { document, targetIds = [], removedTargetIds = [] } = m.documentChange;
      for (const id of targetIds) this.targets.get(id)?.set(document.name, document.fields || {});
      for (const id of removedTargetIds) this.targets.get(id)?.delete(document.name);
    } else if (m.documentDelete || m.documentRemove) {
      const change = m.documentDelete || m.documentRemove;
      for (const id of change.removedTargetIds || []) this.targets.get(id)?.delete(change.document);
    } else if (m.filter) {
      const held = this.targets.get(m.filter.targetId)?.size ?? 0;
      if (held !== (m.filter.count || 0)) this.filterMismatches += 1;
    }
  }

  // { targetId: { "collection/doc": fields } }, names relative to the database, for comparing.
  take() {
    const out = {};
    for (const [id, docs] of [...this.targets].sort((a, b) => a[0] - b[0])) {
      if (!this.current.has(id)) continue;
      const entries = [...docs].map(([name, fields]) => [name.split('/documents/')[1], fields]).sort();
      out[id] = Object.fromEntries(entries);
    }
    return out;
  }
}
