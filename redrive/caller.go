package redrive

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// lookupCaller asks STS who the caller is (one GetCallerIdentity call), or,
// when local, says so without a call. It never fails: a failure is a Caller
// with Check CallerSTSFailed, and the error is returned too for the gate.
func lookupCaller(ctx context.Context, api IdentityAPI, local bool) (audit.Caller, error) {
	c := audit.Caller{Check: audit.CallerLocal, OSUser: audit.OSUser()}
	if local {
		return c, nil
	}
	if api == nil {
		c.Check, c.Error = audit.CallerSTSFailed, "no STS client"
		return c, refuse(redrivetype.CodeIdentity, "no STS client to check the caller's identity")
	}
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		c.Check, c.Error = audit.CallerSTSFailed, err.Error()
		return c, refuse(redrivetype.CodeIdentity, "sts GetCallerIdentity: %v", err)
	}
	c.Check, c.ARN, c.Account = audit.CallerSTS, aws.ToString(out.Arn), aws.ToString(out.Account)
	return c, nil
}
