// Firestore's REST form is JSON: the JSON value and its writers come with the model.
@_exported import WireFormats
