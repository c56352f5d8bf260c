package redrive

import (
	"net"
	"net/url"
	"strings"

	"github.com/agentdlq/agentdlq/pipeline"
)

// TagRedriveRole is the DLQ tag that names the pipeline's redrive role (its
// name or its IAM ARN). The CDK app sets it; the gate compares the caller's
// assumed role with it in AWS.
const TagRedriveRole = "agentdlq:redrive-role"

// Rate bounds: SQS move tasks take at most 500 messages a second, and select
// keeps to the same bound.
const (
	MinRate     = 1
	MaxRate     = 500
	DefaultRate = 10
)

// Identity is what the gate knows of the caller.
type Identity struct {
	// Local is true when the SQS endpoint is on a loopback address (the local
	// emulators): there is no IAM to check, and the check is skipped with a
	// logged note. See IsLocalEndpoint.
	Local bool
	// CallerARN is sts GetCallerIdentity's Arn (required when !Local).
	CallerARN string
	// RedriveRole is the DLQ's agentdlq:redrive-role tag: a role name or an
	// IAM role ARN (required when !Local).
	RedriveRole string
}

// GateInput is everything the gate decides on.
type GateInput struct {
	Pipeline *pipeline.Pipeline
	// Owner is --owner: it must equal Pipeline.Owner.
	Owner string
	// Why is --why: required, non-blank.
	Why string
	// Rate is --rate in messages a second: 1..500.
	Rate int
	// QueueTags are the DLQ's tags (ListQueueTags): agentdlq:owner must
	// equal Pipeline.Owner.
	QueueTags map[string]string
	Identity  Identity
}

// Gate checks who may redrive. It is pure; it returns nil or a *Refusal with
// a one-line reason (the first failed rule, in the order: why, rate, owner,
// owner tag, identity).
func Gate(in GateInput) error {
	p := in.Pipeline
	if p == nil {
		return refuse(CodeUnknownPipeline, "no pipeline")
	}
	if strings.TrimSpace(in.Why) == "" {
		return refuse(CodeWhy, "--why is required: say why this redrive is safe now (the fix, the incident)")
	}
	if err := CheckRate(in.Rate); err != nil {
		return err
	}
	if in.Owner != p.Owner {
		return refuse(CodeOwner, "owner %q may not redrive pipeline %q: only its owner %q may", in.Owner, p.Name, p.Owner)
	}
	tag, ok := in.QueueTags[pipeline.TagOwner]
	if !ok {
		return refuse(CodeOwnerTag, "the DLQ of pipeline %q has no %s tag: it was not created from the pipeline definition", p.Name, pipeline.TagOwner)
	}
	if tag != p.Owner {
		return refuse(CodeOwnerTag, "the DLQ's %s tag %q disagrees with the pipeline definition's owner %q: fix the definition or redeploy", pipeline.TagOwner, tag, p.Owner)
	}
	if pt, ok := in.QueueTags[pipeline.TagPipeline]; ok && pt != p.Name {
		return refuse(CodeOwnerTag, "the DLQ is tagged %s=%q, not %q", pipeline.TagPipeline, pt, p.Name)
	}
	if in.Identity.Local {
		return nil
	}
	return CheckCaller(in.Identity.CallerARN, in.Identity.RedriveRole)
}

// CheckRate refuses a rate outside 1..500 messages a second.
func CheckRate(rate int) error {
	if rate < MinRate || rate > MaxRate {
		return refuse(CodeRate, "--rate %d is outside %d..%d messages a second", rate, MinRate, MaxRate)
	}
	return nil
}

// CheckCaller accepts a caller whose ARN is an assumed-role session of the
// redrive role: arn:PARTITION:sts::ACCOUNT:assumed-role/NAME/SESSION, where
// NAME is the role's name (an IAM role ARN's last path element) and, when
// role is an ARN, ACCOUNT is the role's account.
func CheckCaller(callerARN, role string) error {
	role = strings.TrimSpace(role)
	if role == "" {
		return refuse(CodeIdentity, "the DLQ carries no %s tag naming the pipeline's redrive role: deploy it with the CDK app", TagRedriveRole)
	}
	wantName, wantAccount := role, ""
	if strings.HasPrefix(role, "arn:") {
		parts := strings.SplitN(role, ":", 6)
		if len(parts) != 6 || parts[2] != "iam" || !strings.HasPrefix(parts[5], "role/") {
			return refuse(CodeIdentity, "the %s tag %q is not an IAM role ARN", TagRedriveRole, role)
		}
		wantAccount = parts[4]
		path := strings.Split(parts[5], "/")
		wantName = path[len(path)-1]
	}
	parts := strings.SplitN(callerARN, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" || !strings.HasPrefix(parts[5], "assumed-role/") {
		return refuse(CodeIdentity, "caller %q is not an assumed role: assume the pipeline's redrive role %q first", callerARN, wantName)
	}
	name := strings.Split(strings.TrimPrefix(parts[5], "assumed-role/"), "/")[0]
	if name != wantName || (wantAccount != "" && parts[4] != wantAccount) {
		return refuse(CodeIdentity, "caller %q is not the pipeline's redrive role %q", callerARN, role)
	}
	return nil
}

// IsLocalEndpoint reports whether an endpoint URL points at this machine
// (localhost, 127.0.0.0/8 or ::1). That is how redrive tells the local
// emulators from AWS: an empty endpoint (the SDK's default, AWS itself) and any
// other host are AWS, where the identity check runs.
func IsLocalEndpoint(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
