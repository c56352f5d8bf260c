// Package sqsevent is functions/batch's codec of the Lambda SQS event: a
// single-pass decoder of the invocation payload (Decode) that agrees with
// json.Unmarshal into aws-lambda-go's events.SQSEvent on every input but a
// repeated key, and the records it leaves (Message): views of the buffer it
// decoded, their attributes and message attributes kept raw and decoded
// when read. FromSQSEvent builds the same records from an events.SQSEvent
// (batch's Handle). The failure policy adopters read stays in batch; batch
// exports what adopters need of this package (DecodeEvent, Event,
// ErrNotSQSEvent, ErrRepeatedJSONKey, AttrRequeued).
//
// The decoder's offsets are named: a record's own strings are cut from one
// allocation at the spans decoder.cur holds (ownID, ownReceipt, ownGroup),
// the system attributes a dead letter reads at the spans Message.sys holds
// (sysSentAt, sysFirstReceive, sysTraceHeader), and a record's members and
// a message attribute's members are indexed by the f… and m… constants.
package sqsevent
