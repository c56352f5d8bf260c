// Package audit is the redrive audit log: one Entry for every redrive
// action and refusal (who declared they act, who the machine says ran it,
// what was asked, why, and what came of it), appended to a Store (a JSONL
// file, FileStore, or one S3 object per record, S3Store) and read back by
// the decisions `redrive plan` shows and by the console's audit page.
//
// Package redrive writes the entries; this package owns their shape, where
// they are kept and the caller identity (Caller) each one carries, so that a
// reader (the console, a compliance export) needs no Redriver.
// docs/redrive.md describes the records.
package audit
