package redrive

import (
	"github.com/agentdlq/agentdlq/triage"
)

// TriageTagger tags a letter exactly as triage does (triage.Tag), so that
// the reasons and fingerprints redrive selects by are the ones the triage
// report and the plan show.
func TriageTagger(l *Letter) {
	t := triage.Tag(triage.Message{
		MessageID: l.MessageID, ReceiptHandle: l.ReceiptHandle, Body: l.Body, Attributes: l.Attributes,
		SentTimestamp: l.SentTimestamp, ReceiveCount: l.ReceiveCount, MessageGroupID: l.MessageGroupID,
	})
	l.Reason, l.Fingerprint, l.Meta = t.Reason, t.Fingerprint, t.Meta
}

// GroupsFromReport turns a triage report's groups into redrive groups.
func GroupsFromReport(r *triage.Report) []Group {
	if r == nil {
		return nil
	}
	out := make([]Group, 0, len(r.Groups))
	for _, g := range r.Groups {
		out = append(out, Group{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count})
	}
	return out
}

var _ Tagger = TriageTagger
