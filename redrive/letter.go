package redrive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/triage"
)

// letter is one dead letter as redrive sees it: the message as triage reads
// it and, once the Redriver tagged it (Redriver.tag: triage.Senders.Tag, once a
// pass), its reason, fingerprint, metadata and hints, the very values the
// triage report and the plan show and a filter matches on. A letter only
// released or hidden again is never tagged.
type letter struct {
	triage.Tagged
}

// selector chooses the dead letters a selective redrive moves: the letter's
// reason must be one of Reasons, and, when Fingerprints is not empty, its
// fingerprint one of them.
type selector struct {
	Reasons      []deadletter.Reason
	Fingerprints []string
}

// match reports whether a letter (or a group) of reason and fingerprint
// is chosen.
func (s selector) match(reason deadletter.Reason, fingerprint string) bool {
	ok := false
	for _, r := range s.Reasons {
		if reason == r {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if len(s.Fingerprints) == 0 {
		return true
	}
	for _, f := range s.Fingerprints {
		if fingerprint == f {
			return true
		}
	}
	return false
}

// original is what a redrive sends back: the body byte for byte and the
// original attributes (dlq_* removed, folded attributes restored).
type original struct {
	Body       string
	Attributes map[string]deadletter.Attribute
	// IdempotencyKey is the task's key ("" when the body has none: a json_invalid body).
	IdempotencyKey string
	// Tenant is the task's tenant, from where the key came from: with the
	// pipeline it scopes the key in the ledger (Redriver.ledgerKey).
	Tenant string
	// OriginalMessageID is the message id on the hot queue before dead-lettering.
	OriginalMessageID string
	// GroupID is the FIFO message group ("" for standard queues).
	GroupID string
	// DedupID is the FIFO deduplication id, derived from OriginalMessageID so
	// that a resend after a crash is deduplicated by SQS.
	DedupID string
	// Evidence is the claim check that holds the attributes the dead letter
	// gave up to fit the DLQ (dlq_meta's evidence, "" for none). Select
	// reads it back (Config.Evidence) before it sends anything.
	Evidence string
}

// restore computes what to send back for l. A letter whose metadata cannot
// be read still has its dlq_* attributes removed (deadletter.DecodeDeadLetter).
// The attributes of a letter that gave some up to a claim check (Evidence)
// are completed from it by Select, which reads S3; restore does not.
func restore(l *letter) original {
	meta, attrs, _ := deadletter.DecodeDeadLetter(l.Attributes)
	if meta == nil {
		meta = l.Meta
	}
	o := original{Body: l.Body, Attributes: attrs, OriginalMessageID: l.MessageID, GroupID: l.MessageGroupID}
	if meta != nil {
		o.IdempotencyKey, o.Tenant = meta.IdempotencyKey, meta.Tenant
		if meta.MessageID != "" {
			o.OriginalMessageID = meta.MessageID
		}
		if meta.MessageGroupID != "" {
			o.GroupID = meta.MessageGroupID
		}
		o.Evidence = meta.Evidence
	}
	if o.IdempotencyKey == "" || o.Tenant == "" {
		// The body is the task the worker scoped the key with.
		var probe struct {
			Key    string `json:"idempotency_key"`
			Tenant string `json:"tenant"`
		}
		if json.Unmarshal([]byte(l.Body), &probe) == nil {
			if o.IdempotencyKey == "" {
				o.IdempotencyKey = probe.Key
			}
			if o.Tenant == "" {
				o.Tenant = probe.Tenant
			}
		}
	}
	sum := sha256.Sum256([]byte("agentdlq-redrive:" + o.OriginalMessageID))
	o.DedupID = hex.EncodeToString(sum[:])
	return o
}

// ledgerKey is the ledger's key of a task of tenant with idempotency key
// key on this pipeline (ledger.Key): keys are scoped to their pipeline and
// tenant, so that no other tenant's letter reads or counts this one's.
func (r *Redriver) ledgerKey(tenant, key string) string {
	return ledger.Key(r.cfg.Pipeline.Name, tenant, key)
}

// bodySHA256 is the hex SHA-256 of a body.
func bodySHA256(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:])
}

// fromSQS converts a received message into an untagged letter.
func fromSQS(m sqstypes.Message) letter {
	var l letter
	l.MessageID = aws.ToString(m.MessageId)
	l.ReceiptHandle = aws.ToString(m.ReceiptHandle)
	l.Body = aws.ToString(m.Body)
	l.Attributes = attributesFromSQS(m.MessageAttributes)
	if v, ok := m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			l.SentTimestamp = time.UnixMilli(ms).UTC()
		}
	}
	if v, ok := m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)]; ok {
		l.ReceiveCount, _ = strconv.Atoi(v)
	}
	l.MessageGroupID = m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	return l
}

// attributesFromSQS converts SDK message attributes.
var attributesFromSQS = sqsio.DeadLetterAttributes

// attributesToSQS converts to SDK message attributes.
var attributesToSQS = sqsio.MessageAttributes
