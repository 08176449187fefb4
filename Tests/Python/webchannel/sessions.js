// Scripted sessions over WebChannel (see webchannel_client.js), run in the page by webchannel_check.py.
import { WebChannelStream } from './webchannel_client.js';

// What the SDK puts in initMessageHeaders (rest_connection.ts modifyHeadersForRequest).
const SDK_HEADERS = { 'X-Goog-Api-Client': 'gl-js/ fire/12.0.0', 'Content-Type': 'text/plain' };

const isGlobalNoChange = (m) => m.targetChange && !m.targetChange.targetChangeType && !(m.targetChange.targetIds || []).length;

function doc(docs, path, fields) {
  const out = {};
  for (const [k, v] of Object.entries(fields)) out[k] = typeof v === 'number' ? { integerValue: String(v) } : { stringValue: v };
  return { name: `${docs}/${path}`, fields: out };
}

// A write answer without what differs by server and time (ids, tokens, times): what it says.
const answerShape = (a) => ({ writeResults: (a.writeResults || []).map((r) => Object.keys(r).sort()), commitTime: 'commitTime' in a });

// The differential session: listen to a document and to a query, write, delete, a document leaving the
// query, resume with a token. Each step: the listener's view once it is consistent again (what an
// onSnapshot callback shows), the kinds of messages that brought it, and the write's answer.
export async function differential(base, project, longPolling) {
  const db = `projects/${project}/databases/(default)`;
  const docs = `${db}/documents`;
  const steps = {};
  const kinds = (messages) => messages.map((m) => Object.keys(m)[0] + (m.targetChange ? `:${m.targetChange.targetChangeType || 'NO_CHANGE'}` : ''));
  const write = new WebChannelStream(base, 'Write', db, { longPolling, headers: SDK_HEADERS });
  await write.open({ database: db });
  await write.until((r) => r.length >= 1);
  let token = write.received[0].streamToken;
  let acked = 1;
  const commit = async (writes) => {
    await write.send({ streamToken: token, writes });
    await write.until((r) => r.length > acked);
    const answer = write.received[acked++];
    token = answer.streamToken;
    return answerShape(answer);
  };
  steps.writeHandshake = { answer: Object.keys(write.received[0]).sort() };
  steps.seed = { answer: await commit([{ update: doc(docs, 'chats/c1', { last: '' }) }]) };

  const listen = new WebChannelStream(base, 'Listen', db, { longPolling, headers: SDK_HEADERS });
  await listen.open({ database: db, addTarget: { documents: { documents: [`${docs}/chats/c1`, `${docs}/chats/none`] }, targetId: 2 } });
  steps.documentTarget = { view: await listen.untilView((v) => 2 in v) };
  const query = {
    parent: docs,
    structuredQuery: { from: [{ collectionId: 'msgs' }], where: { fieldFilter: { field: { fieldPath: 'room' }, op: 'EQUAL', value: { stringValue: 'r1' } } } },
  };
  await listen.send({ database: db, addTarget: { query, targetId: 4 } });
  steps.queryTarget = { view: await listen.untilView((v) => 4 in v) };

  const step = async (name, writes, settled) => {
    console.log(`step ${name}`);
    const from = listen.received.length;
    const answer = await commit(writes);
    const view = await listen.untilView(settled);
    steps[name] = { answer, view, messages: kinds(listen.received.slice(from)) };
  };
  await step('create', [{ update: doc(docs, 'msgs/m1', { room: 'r1', text: 'Dinner at 6pm • 📷 Photo' }) }], (v) => 'msgs/m1' in v[4]);
  await step('update', [{ update: doc(docs, 'chats/c1', { last: 'Dinner at 6pm' }), updateMask: { fieldPaths: ['last'] } }],
    (v) => v[2]['chats/c1']?.last?.stringValue === 'Dinner at 6pm');
  await step('leaveQuery', [{ update: doc(docs, 'msgs/m1', { room: 'r2' }), updateMask: { fieldPaths: ['room'] } }], (v) => !('msgs/m1' in v[4]));
  await step('delete', [{ delete: `${docs}/chats/c1` }], (v) => !('chats/c1' in v[2]));

  // The resume token of the last global NO_CHANGE: the point the client's view is consistent at. The
  // new stream starts from the view the client kept (the SDK keeps it in its cache).
  console.log('resume');
  const resumeToken = [...listen.received].reverse().find(isGlobalNoChange).targetChange.resumeToken;
  const kept = listen.view.targets.get(4);
  await listen.close();
  steps.whileAway = { answer: await commit([{ update: doc(docs, 'msgs/m2', { room: 'r1', text: 'Are you coming?' }) }]) };
  const again = new WebChannelStream(base, 'Listen', db, { longPolling, headers: SDK_HEADERS });
  again.view.targets.set(4, new Map(kept));
  await again.open({ database: db, addTarget: { query, targetId: 4, resumeToken } });
  const resumed = await again.untilView((v) => 4 in v && 'msgs/m2' in v[4]);
  steps.resumed = { view: resumed, filterMismatches: again.view.filterMismatches };
  await again.close();
  await write.close();
  return { steps, backChannels: listen.backChannels + write.backChannels + again.backChannels };
}

// Bob's chat list (herald dev --seed demo, default schema) while Alice writes to Family through the
// same Write stream the SDK uses: what Bob's listener sees of the conversation's last message.
export async function chatList(base, project, longPolling) {
  const db = `projects/${project}/databases/(default)`;
  const docs = `${db}/documents`;
  const listen = new WebChannelStream(base, 'Listen', db, { longPolling, headers: SDK_HEADERS });
  const query = {
    parent: docs,
    structuredQuery: {
      from: [{ collectionId: 'conversations' }],
      where: { fieldFilter: { field: { fieldPath: 'members' }, op: 'ARRAY_CONTAINS', value: { stringValue: 'bob' } } },
    },
  };
  await listen.open({ database: db, addTarget: { query, targetId: 2 } });
  await listen.untilView((v) => 2 in v);
  const text = `Dinner at 6pm (${longPolling ? 'long polling' : 'streaming'})`;
  const write = new WebChannelStream(base, 'Write', db, { longPolling, headers: SDK_HEADERS });
  await write.open({ database: db });
  await write.until((r) => r.length >= 1);
  const id = `wc-${Date.now()}`;
  const message = doc(docs, `conversations/family/messages/${id}`, { senderId: 'alice', senderName: 'Alice', text, type: 'text', status: 'sending' });
  // serverTimestamp(), as the SDK sends it: a transform of the same write.
  const timestamp = { fieldPath: 'timestamp', setToServerValue: 'REQUEST_TIME' };
  await write.send({
    streamToken: write.received[0].streamToken,
    writes: [{ update: message, updateTransforms: [timestamp], currentDocument: { exists: false } }],
  });
  const view = await listen.untilView((v) => JSON.stringify(v[2]['conversations/family'] || {}).includes(text), 30000);
  await listen.close();
  await write.close();
  return { family: view[2]['conversations/family'], text, backChannels: listen.backChannels };
}
