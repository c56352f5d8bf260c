package redrive

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// EvidenceAPI is the S3 call that reads a claim check back: a dead letter
// too large for the DLQ gave up its attributes (beyond those kept on the
// message) to a claim check in the eval bucket, under
// <pipeline>/evidence/ (functions/batch, deadletter.FitDeadLetter).
type EvidenceAPI interface {
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// maxEvidenceBytes bounds a claim check read back: its metadata (at most
// deadletter.MaxMetaBytes before reduction, plus the history) and the
// original attributes of a message of at most 1 MiB.
const maxEvidenceBytes = 4 << 20

// restoreEvidence completes o's attributes from the claim check its dead
// letter points to (o.Evidence): every original attribute, as the producer
// sent it. It refuses, and nothing is sent, when there is no S3 client, the
// reference is not under the pipeline's own <pipeline>/evidence/ prefix,
// the object cannot be read or parsed, or it belongs to another message: a
// letter is never sent back without the attributes it gave up.
func (r *Redriver) restoreEvidence(ctx context.Context, o *Original) error {
	if o.Evidence == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(o.Evidence, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	prefix := r.cfg.Pipeline.Name + "/evidence/"
	if !ok || bucket == "" || !strings.HasPrefix(key, prefix) || strings.Contains(key, "..") {
		return fmt.Errorf("claim check %q is not under s3://<eval bucket>/%s: the dead letter stays in the DLQ", o.Evidence, prefix)
	}
	if r.cfg.Evidence == nil {
		return fmt.Errorf("the dead letter's attributes are in claim check %s and redrive has no S3 client to read it (Config.Evidence): it stays in the DLQ", o.Evidence)
	}
	out, err := r.cfg.Evidence.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("read claim check %s: %w; the dead letter stays in the DLQ", o.Evidence, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxEvidenceBytes+1))
	if err != nil {
		return fmt.Errorf("read claim check %s: %w; the dead letter stays in the DLQ", o.Evidence, err)
	}
	if len(data) > maxEvidenceBytes {
		return fmt.Errorf("claim check %s is larger than %d bytes: the dead letter stays in the DLQ", o.Evidence, maxEvidenceBytes)
	}
	var ev deadletter.Evidence
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("claim check %s is not a claim check: %w; the dead letter stays in the DLQ", o.Evidence, err)
	}
	if ev.Meta.MessageID != o.OriginalMessageID {
		return fmt.Errorf("claim check %s is of message %q, not %q: the dead letter stays in the DLQ", o.Evidence, ev.Meta.MessageID, o.OriginalMessageID)
	}
	// Every original attribute; those the dead letter carried (kept, or
	// folded into dlq_meta) are the same ones, as the message carried them.
	attrs := maps.Clone(ev.Attributes)
	if attrs == nil {
		attrs = map[string]deadletter.Attribute{}
	}
	maps.Copy(attrs, o.Attributes)
	o.Attributes = attrs
	return nil
}
