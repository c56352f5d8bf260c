package sqsio

import (
	"context"
	"sort"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// VisibilityBatchAPI is the one call Release makes.
type VisibilityBatchAPI interface {
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Release makes the received messages of a queue visible again at once
// (visibility timeout 0), ten to a ChangeMessageVisibilityBatch call, in
// message id order. handles maps a message id to its latest receipt handle.
// It goes on past a failed call and returns how many were released, how
// many were not, and the last call error; a message not released comes back
// when its visibility timeout lapses, so a failure loses nothing.
func Release(ctx context.Context, api VisibilityBatchAPI, queueURL string, handles map[string]string) (released, failed int, err error) {
	ids := make([]string, 0, len(handles))
	for id := range handles {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i := 0; i < len(ids); i += 10 {
		batch := ids[i:min(i+10, len(ids))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
		for j, id := range batch {
			entries[j] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(handles[id]), VisibilityTimeout: 0}
		}
		out, cerr := api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if cerr != nil {
			failed += len(batch)
			err = cerr
			continue
		}
		released += len(out.Successful)
		failed += len(out.Failed)
	}
	return released, failed, err
}
