// An app's sign-in and writes with Google's own Firebase JS SDK (12.17.0), against herald dev: each
// session returns what the app saw, for the test to check.
import { initializeApp } from "./firebase-app.js";
import {
  getAuth, connectAuthEmulator, createUserWithEmailAndPassword, signInWithEmailAndPassword, signOut, updateProfile,
  signInAnonymously, onAuthStateChanged, sendPasswordResetEmail, confirmPasswordReset, browserLocalPersistence, setPersistence,
} from "./firebase-auth.js";
import {
  initializeFirestore, connectFirestoreEmulator, doc, setDoc, getDoc, serverTimestamp, arrayUnion, onSnapshot,
} from "./firebase-firestore.js";

// longPolling: as React Native must (its fetch cannot stream); otherwise WebChannel streams.
function start(base, project, name, longPolling = false) {
  const app = initializeApp({ projectId: project, apiKey: "fake-api-key", authDomain: `${project}.firebaseapp.com` }, name);
  const auth = getAuth(app);
  connectAuthEmulator(auth, base, { disableWarnings: true });
  const url = new URL(base);
  const db = initializeFirestore(app, { experimentalForceLongPolling: longPolling });
  connectFirestoreEmulator(db, url.hostname, Number(url.port));
  return { app, auth, db };
}

async function code(promise) {
  try { await promise; return "no error"; } catch (error) { return error.code || String(error); }
}

function nextUser(auth) {
  return new Promise((resolve) => { const stop = onAuthStateChanged(auth, (user) => { stop(); resolve(user); }); });
}

window.sessions = {
  // Sign-up, profile, reload, sign-out and in again, the errors an app's sign-up screen shows, anonymous, a forced refresh.
  async signIn(base, project) {
    const { auth } = start(base, project, "signIn");
    await setPersistence(auth, browserLocalPersistence);
    const created = await createUserWithEmailAndPassword(auth, "ann@example.com", "secret123");
    await updateProfile(created.user, { displayName: "Ann" });
    await created.user.reload();
    const afterReload = auth.currentUser.displayName;
    const firstToken = await created.user.getIdToken();
    // A token carries its issue time in seconds: a refresh within the same second would read the same.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const refreshed = await created.user.getIdToken(true);
    await signOut(auth);
    const again = await signInWithEmailAndPassword(auth, "ann@example.com", "secret123");
    const errors = {
      wrongPassword: await code(signInWithEmailAndPassword(auth, "ann@example.com", "not-it-at-all")),
      unknownEmail: await code(signInWithEmailAndPassword(auth, "nobody@example.com", "secret123")),
      secondSignUp: await code(createUserWithEmailAndPassword(auth, "ann@example.com", "other-secret")),
      weakPassword: await code(createUserWithEmailAndPassword(auth, "short@example.com", "abc")),
      badEmail: await code(createUserWithEmailAndPassword(auth, "not-an-email", "secret123")),
    };
    const signedIn = { uid: again.user.uid, email: again.user.email, displayName: again.user.displayName };
    const anonymousApp = start(base, project, "anonymous");
    const anonymous = await signInAnonymously(anonymousApp.auth);
    return {
      createdUid: created.user.uid, afterReload, signedIn, errors, anonymous: { uid: anonymous.user.uid, isAnonymous: anonymous.user.isAnonymous },
      tokenChanged: firstToken !== refreshed, tokenClaims: JSON.parse(atob(refreshed.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))),
    };
  },

  // After a page reload: the user signed in before is restored from the browser's storage.
  async restored(base, project) {
    const { auth } = start(base, project, "signIn");
    const user = await nextUser(auth);
    return { uid: user?.uid ?? null, email: user?.email ?? null };
  },

  // Two signed-in users write their user documents and a conversation; one writes a message, and the
  // other's listener sees the functions' last message come back.
  async chat(base, project, longPolling = false) {
    const mode = longPolling ? "poll" : "chat";
    const ann = start(base, project, `ann-${mode}`, longPolling);
    const ben = start(base, project, `ben-${mode}`, longPolling);
    const a = await createUserWithEmailAndPassword(ann.auth, `ann.${mode}@example.com`, "secret123");
    const b = await createUserWithEmailAndPassword(ben.auth, `ben.${mode}@example.com`, "secret123");
    await setDoc(doc(ann.db, "users", a.user.uid), { name: "Ann", fcmTokens: arrayUnion(`tok-ann-${mode}`) });
    await setDoc(doc(ben.db, "users", b.user.uid), { name: "Ben", fcmTokens: arrayUnion(`tok-ben-${mode}`) });
    const members = [a.user.uid, b.user.uid];
    const conversation = `ann-ben-${mode}`;
    await setDoc(doc(ann.db, "conversations", conversation), { members, unreadCount: { [a.user.uid]: 0, [b.user.uid]: 0 } });
    let stop;
    const lastMessage = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("Ben's listener never saw the last message")), 60000);
      stop = onSnapshot(doc(ben.db, "conversations", conversation), (snapshot) => {
        const text = snapshot.data()?.lastMessage?.text;
        if (text) { clearTimeout(timer); resolve(text); }
      }, reject);
    });
    await setDoc(doc(ann.db, "conversations", conversation, "messages", "m1"),
      { senderId: a.user.uid, senderName: "Ann", text: "Hi Ben", type: "text", status: "sending", timestamp: serverTimestamp() });
    const written = await getDoc(doc(ben.db, "conversations", conversation, "messages", "m1"));
    const seen = await lastMessage;
    stop();
    return { ann: a.user.uid, ben: b.user.uid, messageText: written.data()?.text ?? null, lastMessageSeen: seen };
  },

  async chatLongPolling(base, project) { return this.chat(base, project, true); },

  // A forgotten password: the reset's code, taken from herald dev's list of links, sets a new one.
  async passwordReset(base, project) {
    const { auth } = start(base, project, "reset");
    await createUserWithEmailAndPassword(auth, "forgot@example.com", "secret123");
    await signOut(auth);
    await sendPasswordResetEmail(auth, "forgot@example.com");
    const codes = await (await fetch(`${base}/emulator/v1/projects/${project}/oobCodes`)).json();
    const reset = codes.oobCodes.filter((c) => c.email === "forgot@example.com" && c.requestType === "PASSWORD_RESET").pop();
    await confirmPasswordReset(auth, reset.oobCode, "new-secret-456");
    const oldPassword = await code(signInWithEmailAndPassword(auth, "forgot@example.com", "secret123"));
    const newPassword = await signInWithEmailAndPassword(auth, "forgot@example.com", "new-secret-456");
    return { oldPassword, signedIn: newPassword.user.email };
  },
};
document.title = "ready";
