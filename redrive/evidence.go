package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
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

// claimCheckFailure is why a dead letter's claim check restored nothing.
// The letter is never sent without the attributes it gave up: Select leaves
// it in the DLQ, counts it (SelectResult.ClaimCheckFailed, Unrestored) and
// goes on.
type claimCheckFailure struct {
	// Ref is the reference the dead letter carries (dlq_meta's evidence).
	Ref   string
	Cause redrivetype.ClaimCheckCause
	Err   error
}

func (f *claimCheckFailure) message() string {
	return f.Err.Error() + ": the dead letter stays in the DLQ"
}

// restoreEvidence completes o's attributes from the claim check its dead
// letter points to (o.Evidence): every original attribute, as the producer
// sent it. It refuses, with a *claimCheckFailure, and nothing is sent, when the
// reference is not under the pipeline's own <pipeline>/evidence/ prefix,
// there is no S3 client or no eval bucket configured (Config.Evidence,
// Config.EvidenceBucket), the reference is in another bucket, the object
// cannot be read, is too large or does not parse, or it belongs to another
// message: a letter is never sent back without the attributes it gave up.
func (r *Redriver) restoreEvidence(ctx context.Context, o *original) *claimCheckFailure {
	if o.Evidence == "" {
		return nil
	}
	fail := func(cause redrivetype.ClaimCheckCause, format string, args ...any) *claimCheckFailure {
		return &claimCheckFailure{Ref: o.Evidence, Cause: cause, Err: fmt.Errorf(format, args...)}
	}
	rest, ok := strings.CutPrefix(o.Evidence, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	prefix := r.cfg.Pipeline.Name + "/evidence/"
	if !ok || bucket == "" || !strings.HasPrefix(key, prefix) || strings.Contains(key, "..") {
		return fail(redrivetype.ClaimCheckOutsidePrefix, "claim check %q is not under s3://<eval bucket>/%s", o.Evidence, prefix)
	}
	if r.cfg.Evidence == nil {
		return fail(redrivetype.ClaimCheckNoClient, "the dead letter's attributes are in claim check %s and redrive has no S3 client to read it (Config.Evidence)", o.Evidence)
	}
	if r.cfg.EvidenceBucket == "" {
		return fail(redrivetype.ClaimCheckNoBucket, "the dead letter's attributes are in claim check %s and no eval bucket is configured, so no bucket is read (Config.EvidenceBucket: the eval bucket, the stack output EvalBucketName)", o.Evidence)
	}
	if bucket != r.cfg.EvidenceBucket {
		return fail(redrivetype.ClaimCheckOtherBucket, "claim check %s is not in the eval bucket %s", o.Evidence, r.cfg.EvidenceBucket)
	}
	out, err := r.cfg.Evidence.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		cause := redrivetype.ClaimCheckUnreadable
		var nk *s3types.NoSuchKey
		var nb *s3types.NoSuchBucket
		var api smithy.APIError
		if errors.As(err, &nk) || errors.As(err, &nb) || (errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NoSuchBucket")) {
			cause = redrivetype.ClaimCheckMissing
		}
		return fail(cause, "read claim check %s: %w", o.Evidence, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxEvidenceBytes+1))
	if err != nil {
		return fail(redrivetype.ClaimCheckUnreadable, "read claim check %s: %w", o.Evidence, err)
	}
	if len(data) > maxEvidenceBytes {
		return fail(redrivetype.ClaimCheckTooLarge, "claim check %s is larger than %d bytes", o.Evidence, maxEvidenceBytes)
	}
	var ev deadletter.Evidence
	if err := json.Unmarshal(data, &ev); err != nil {
		return fail(redrivetype.ClaimCheckNotClaimCheck, "claim check %s is not a claim check: %w", o.Evidence, err)
	}
	if ev.Meta.MessageID != o.OriginalMessageID {
		return fail(redrivetype.ClaimCheckOtherMessage, "claim check %s is of message %q, not %q", o.Evidence, ev.Meta.MessageID, o.OriginalMessageID)
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
