package redrive

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// evidenceS3 serves claim checks by key.
type evidenceS3 map[string][]byte

func (m evidenceS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if strings.HasSuffix(aws.ToString(in.Key), "/denied.json") {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	}
	b, ok := m[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)]
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("The specified key does not exist.")}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

func TestRestoreEvidence(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, _, _ := newRedriver(t, p, f, f.addPair(p))
	ev, err := deadletter.MarshalEvidence(&deadletter.Evidence{Reduced: []deadletter.Reduction{deadletter.ReducedFolded},
		Meta:       deadletter.Meta{MessageID: "m-1", Reason: deadletter.ReasonUnclassified},
		Attributes: map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}, "given-up": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}})
	require.NoError(t, err)
	r.cfg.EvidenceBucket = "eval"
	r.cfg.Evidence = evidenceS3{
		"eval/agent-tasks/evidence/2026-11-29/m-1.json": ev,
		// A well-formed claim check of the message, in a bucket that is not the eval bucket.
		"other/agent-tasks/evidence/2026-11-29/m-1.json": ev,
		"eval/agent-tasks/evidence/2026-11-29/bad.json":  []byte("not json"),
		"eval/agent-tasks/evidence/2026-11-29/huge.json": bytes.Repeat([]byte(" "), maxEvidenceBytes+1),
	}
	kept := map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}}
	for _, tt := range []struct {
		name, ref, msgID, err string
		cause                 ClaimCheckCause
	}{
		{"restored", "s3://eval/agent-tasks/evidence/2026-11-29/m-1.json", "m-1", "", ""},
		{"another pipeline's prefix", "s3://eval/agent-steps/evidence/2026-11-29/m-1.json", "m-1", "not under", ClaimCheckOutsidePrefix},
		{"a path that climbs", "s3://eval/agent-tasks/evidence/../audit/x.json", "m-1", "not under", ClaimCheckOutsidePrefix},
		{"not s3", "https://eval/agent-tasks/evidence/m-1.json", "m-1", "not under", ClaimCheckOutsidePrefix},
		{"missing", "s3://eval/agent-tasks/evidence/2026-11-29/m-2.json", "m-2", "NoSuchKey", ClaimCheckMissing},
		{"not a claim check", "s3://eval/agent-tasks/evidence/2026-11-29/bad.json", "m-1", "is not a claim check", ClaimCheckNotClaimCheck},
		{"another message's", "s3://eval/agent-tasks/evidence/2026-11-29/m-1.json", "m-9", `of message "m-1", not "m-9"`, ClaimCheckOtherMessage},
		{"unreadable", "s3://eval/agent-tasks/evidence/2026-11-29/denied.json", "m-1", "AccessDenied", ClaimCheckUnreadable},
		{"too large", "s3://eval/agent-tasks/evidence/2026-11-29/huge.json", "m-1", "larger than", ClaimCheckTooLarge},
		{"another bucket", "s3://other/agent-tasks/evidence/2026-11-29/m-1.json", "m-1", "not in the eval bucket eval", ClaimCheckOtherBucket},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Original{Evidence: tt.ref, OriginalMessageID: tt.msgID, Attributes: kept}
			err := r.restoreEvidence(context.Background(), &o)
			if tt.err == "" {
				require.NoError(t, err)
				assert.Equal(t, map[string]deadletter.Attribute{"kept": kept["kept"], "given-up": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}, o.Attributes)
				return
			}
			var cc *ClaimCheckError
			require.ErrorAs(t, err, &cc)
			assert.Equal(t, tt.cause, cc.Cause)
			assert.Equal(t, tt.ref, cc.Ref)
			assert.Contains(t, err.Error(), tt.err)
			assert.Contains(t, err.Error(), "stays in the DLQ")
			assert.Equal(t, kept, o.Attributes, "unchanged")
		})
	}
	// No eval bucket configured: no bucket is read, and the error says why.
	r.cfg.EvidenceBucket = ""
	o := Original{Evidence: "s3://eval/agent-tasks/evidence/2026-11-29/m-1.json", OriginalMessageID: "m-1"}
	err = r.restoreEvidence(context.Background(), &o)
	var cc *ClaimCheckError
	require.ErrorAs(t, err, &cc)
	assert.Equal(t, ClaimCheckNoBucket, cc.Cause)
	assert.ErrorContains(t, err, "no eval bucket is configured")
	assert.ErrorContains(t, err, "Config.EvidenceBucket")
	assert.Empty(t, o.Attributes)

	r.cfg.Evidence = nil
	err = r.restoreEvidence(context.Background(), &o)
	require.ErrorAs(t, err, &cc)
	assert.Equal(t, ClaimCheckNoClient, cc.Cause)
	assert.ErrorContains(t, err, "no S3 client")
}
