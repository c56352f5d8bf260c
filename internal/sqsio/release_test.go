package sqsio

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batchAPI answers each ChangeMessageVisibilityBatch call with the next of
// its scripted outcomes and records the calls.
type batchAPI struct {
	calls    []*sqs.ChangeMessageVisibilityBatchInput
	failCall int    // 1-based call that fails as a whole (0: none)
	rejected string // receipt handle the service rejects
}

func (b *batchAPI) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	b.calls = append(b.calls, in)
	if len(b.calls) == b.failCall {
		return nil, errors.New("connection reset")
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if aws.ToString(e.ReceiptHandle) == b.rejected {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid")})
			continue
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func TestReleaseTenACallAndCountsEveryMessage(t *testing.T) {
	handles := map[string]string{}
	for i := range 25 {
		id := string(rune('a'+i/10)) + string(rune('0'+i%10))
		handles[id] = "rh-" + id
	}
	api := &batchAPI{failCall: 2, rejected: "rh-c3"}
	released, failed, err := Release(context.Background(), api, "https://sqs.example/q", handles)
	require.Error(t, err, "the call that failed is reported")
	require.Len(t, api.calls, 3, "25 messages: calls of 10, 10 and 5")
	for i, n := range []int{10, 10, 5} {
		assert.Len(t, api.calls[i].Entries, n)
		assert.Equal(t, "https://sqs.example/q", aws.ToString(api.calls[i].QueueUrl))
		for _, e := range api.calls[i].Entries {
			assert.Zero(t, e.VisibilityTimeout)
		}
	}
	assert.Equal(t, "rh-a0", aws.ToString(api.calls[0].Entries[0].ReceiptHandle), "in message id order")
	assert.Equal(t, 14, released, "10 + 4: the failed call's 10 and the rejected handle are not released")
	assert.Equal(t, 11, failed)
	assert.Equal(t, len(handles), released+failed, "every message counted once")
}

func TestReleaseNothing(t *testing.T) {
	api := &batchAPI{}
	released, failed, err := Release(context.Background(), api, "q", nil)
	require.NoError(t, err)
	assert.Zero(t, released+failed)
	assert.Empty(t, api.calls)
}
