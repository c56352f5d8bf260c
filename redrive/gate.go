package redrive

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// Rate bounds: SQS move tasks take at most 500 messages a second, and select
// keeps to the same bound.
const (
	minRate     = 1
	maxRate     = 500
	DefaultRate = 10
)

// identity is what the gate knows of the caller.
type identity struct {
	// Local is true when every endpoint the command uses is on a loopback
	// address (the local emulators; see Locality): there is no IAM to check,
	// and the check is skipped with a logged note.
	Local bool
	// CallerARN is sts GetCallerIdentity's Arn (required when !Local).
	CallerARN string
	// RedriveRole is the DLQ's agentdlq:redrive-role tag: a role name or an
	// IAM role ARN (required when !Local).
	RedriveRole string
}

// gateInput is everything the gate decides on.
type gateInput struct {
	// Action is optional: what is asked for, so that a refusal speaks of
	// it (a rejection, a reconciliation); empty means a redrive.
	Action   audit.Action
	Pipeline *pipeline.Pipeline
	// Owner is Who.Owner: it must equal Pipeline.Owner.
	Owner string
	// Why is Who.Why: required, non-blank.
	Why string
	// Rate is the rate in messages a second: 1..500.
	Rate int
	// QueueTags are the DLQ's tags (ListQueueTags): agentdlq:owner must
	// equal Pipeline.Owner.
	QueueTags map[string]string
	identity  identity
}

// gate checks who may redrive. It is pure; it returns nil or a *Refusal with
// a one-line reason (the first failed rule, in the order: why, rate, owner,
// owner tag, identity).
func gate(in gateInput) error {
	p := in.Pipeline
	if p == nil {
		return refuse(redrivetype.CodeBadInput, "no pipeline")
	}
	if err := requireOwner(p, in.Action, in.Owner); err != nil {
		return err
	}
	if strings.TrimSpace(in.Why) == "" {
		return refuseField(redrivetype.CodeWhy, "Why", "is required: %s", whyNeeded(in.Action))
	}
	if err := checkRate(in.Rate); err != nil {
		return err
	}
	if in.Owner != p.Owner {
		return refuseField(redrivetype.CodeOwner, "Owner", "%q may not %s pipeline %q: only its owner %q may", in.Owner, verb(in.Action), p.Name, p.Owner)
	}
	tag, ok := in.QueueTags[pipeline.TagOwner]
	if !ok {
		return refuse(redrivetype.CodeOwnerTag, "the DLQ of pipeline %q has no %s tag: it was not created from the pipeline definition", p.Name, pipeline.TagOwner)
	}
	if tag != p.Owner {
		return refuse(redrivetype.CodeOwnerTag, "the DLQ's %s tag %q disagrees with the pipeline definition's owner %q: fix the definition or redeploy", pipeline.TagOwner, tag, p.Owner)
	}
	if pt, ok := in.QueueTags[pipeline.TagPipeline]; ok && pt != p.Name {
		return refuse(redrivetype.CodeOwnerTag, "the DLQ is tagged %s=%q, not %q", pipeline.TagPipeline, pt, p.Name)
	}
	if in.identity.Local {
		return nil
	}
	return checkCaller(in.identity.CallerARN, in.identity.RedriveRole)
}

// RequireOwner is the gate's first rule alone: every gated action (all but
// ActionPlan and ActionStatus, which only read) needs who.Owner. It makes no
// call and reads nothing but p, so that a face asks it before it resolves
// anything (configuration, queues, clients): a command without an owner
// is refused at once, with the gate's own refusal (CodeOwnerMissing, Field
// "Owner"). The gate asks it again, with the rest of its rules.
func RequireOwner(p *pipeline.Pipeline, action audit.Action, who Who) error {
	if action == audit.ActionPlan || action == audit.ActionStatus {
		return nil
	}
	if p == nil {
		return refuse(redrivetype.CodeBadInput, "no pipeline")
	}
	return requireOwner(p, action, who.Owner)
}

func requireOwner(p *pipeline.Pipeline, action audit.Action, owner string) error {
	if strings.TrimSpace(owner) == "" {
		return refuseField(redrivetype.CodeOwnerMissing, "Owner", "is required: only the owner of pipeline %q (%q) may %s it", p.Name, p.Owner, verb(action))
	}
	return nil
}

// whyNeeded is what a missing why should say, in the words of the action.
func whyNeeded(a audit.Action) string {
	switch a {
	case audit.ActionReject:
		return "say why these dead letters are rejected, never redriven (the decision, who was told)"
	case audit.ActionReconcile:
		return "say how the effect was reconciled (which system was checked, what it showed)"
	case audit.ActionPause:
		return "say why the worker must stop now (the incident)"
	case audit.ActionResume:
		return "say why the worker may run again (the fix, the incident)"
	case audit.ActionCancel:
		return "say why the move task must stop (the incident)"
	case audit.ActionRepair:
		return "say why this repair is right (what was wrong in the args, the incident)"
	case audit.ActionBreakerOpen:
		return "say why the dependency's tasks must wait (the provider's incident)"
	case audit.ActionBreakerClose:
		return "say why the dependency may be called again (the provider's recovery)"
	}
	return "say why this redrive is safe now (the fix, the incident)"
}

// verb is what the owner check says the actor may not do to a pipeline.
func verb(a audit.Action) string {
	switch a {
	case audit.ActionReject:
		return "reject the dead letters of"
	case audit.ActionReconcile:
		return "reconcile the ledger keys of"
	case audit.ActionPause:
		return "pause the worker of"
	case audit.ActionResume:
		return "resume the worker of"
	case audit.ActionCancel:
		return "cancel the move task of"
	case audit.ActionRepair:
		return "repair the dead letters of"
	case audit.ActionBreakerOpen:
		return "hold a breaker open on"
	case audit.ActionBreakerClose:
		return "close a breaker on"
	}
	return "redrive"
}

// checkRate refuses a rate outside 1..500 messages a second.
func checkRate(rate int) error {
	if rate < minRate || rate > maxRate {
		return refuseField(redrivetype.CodeRate, "Rate", "%d is outside %d..%d messages a second", rate, minRate, maxRate)
	}
	return nil
}

// checkCaller accepts a caller whose ARN is an assumed-role session of the
// redrive role: arn:PARTITION:sts::ACCOUNT:assumed-role/NAME/SESSION, where
// NAME is the role's name (an IAM role ARN's last path element) and, when
// role is an ARN, ACCOUNT is the role's account.
func checkCaller(callerARN, role string) error {
	role = strings.TrimSpace(role)
	if role == "" {
		return refuse(redrivetype.CodeIdentity, "the DLQ carries no %s tag naming the pipeline's redrive role: deploy it with the CDK app", pipeline.TagRedriveRole)
	}
	wantName, wantAccount := role, ""
	if strings.HasPrefix(role, "arn:") {
		parts := strings.SplitN(role, ":", 6)
		if len(parts) != 6 || parts[2] != "iam" || !strings.HasPrefix(parts[5], "role/") {
			return refuse(redrivetype.CodeIdentity, "the %s tag %q is not an IAM role ARN", pipeline.TagRedriveRole, role)
		}
		wantAccount = parts[4]
		path := strings.Split(parts[5], "/")
		wantName = path[len(path)-1]
	}
	parts := strings.SplitN(callerARN, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" || !strings.HasPrefix(parts[5], "assumed-role/") {
		return refuse(redrivetype.CodeIdentity, "caller %q is not an assumed role: assume the pipeline's redrive role %q first", callerARN, wantName)
	}
	name := strings.Split(strings.TrimPrefix(parts[5], "assumed-role/"), "/")[0]
	if name != wantName || (wantAccount != "" && parts[4] != wantAccount) {
		return refuse(redrivetype.CodeIdentity, "caller %q is not the pipeline's redrive role %q", callerARN, role)
	}
	return nil
}

// isLocalEndpoint reports whether an endpoint URL points at this machine
// (localhost, 127.0.0.0/8 or ::1). That is how redrive tells the local
// emulators from AWS: an empty endpoint (the SDK's default, AWS itself) and any
// other host are AWS, where the identity check runs.
func isLocalEndpoint(endpoint string) bool {
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

// endpoint is the endpoint one AWS client of a command resolved to: the
// client's BaseEndpoint after NewFromConfig (Options().BaseEndpoint). The
// SDK fills it from AWS_ENDPOINT_URL_<SERVICE>, else the shared config's
// services section, else AWS_ENDPOINT_URL (none of them when
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true). "" is the SDK's default:
// the service in AWS.
type endpoint struct {
	// Service names the client ("SQS", "STS", "DynamoDB", "S3", "Lambda").
	Service string
	URL     string
	// AWSOnly marks a client the command calls only in AWS: STS (the caller
	// check) and Lambda (pause and resume; locally the local switch). When
	// its URL is "" it does not count (locally it is never called); when
	// set, it counts like any other.
	AWSOnly bool
}

// localityOf decides whether the caller identity check may be skipped: only
// when every endpoint the command uses is on this machine (isLocalEndpoint),
// where there is no IAM. Any other mix — some local, some AWS or elsewhere
// — is not local, and the check runs; then STS must be AWS's own endpoint
// (the SDK default, or isAWSSTSEndpoint), because a caller ARN from any
// other STS proves nothing: that is a refusal with code
// CodeSTSEndpoint. eps must name STS.
func localityOf(eps []endpoint) (local bool, err error) {
	counted, allLocal := 0, true
	sts, haveSTS := "", false
	for _, e := range eps {
		if e.Service == "STS" {
			sts, haveSTS = e.URL, true
		}
		if e.AWSOnly && e.URL == "" {
			continue
		}
		counted++
		if !isLocalEndpoint(e.URL) {
			allLocal = false
		}
	}
	if counted > 0 && allLocal {
		return true, nil
	}
	if !haveSTS {
		return false, refuse(redrivetype.CodeSTSEndpoint, "no STS endpoint: the caller check needs one")
	}
	if sts != "" && !isAWSSTSEndpoint(sts) {
		return false, refuse(redrivetype.CodeSTSEndpoint, "the STS endpoint %s is not AWS's, and %s: a caller identity from it proves nothing. Unset AWS_ENDPOINT_URL_STS (or the services section's sts) to check the caller in AWS, or point every endpoint at the local emulators",
			redactURL(sts), notLocal(eps))
	}
	return false, nil
}

// notLocal names the endpoints that are not on this machine.
func notLocal(eps []endpoint) string {
	var out []string
	for _, e := range eps {
		if e.AWSOnly && e.URL == "" || isLocalEndpoint(e.URL) {
			continue
		}
		u := "AWS"
		if e.URL != "" {
			u = redactURL(e.URL)
		}
		out = append(out, fmt.Sprintf("%s is %s", e.Service, u))
	}
	if len(out) == 0 {
		return "no endpoint is local"
	}
	return strings.Join(out, ", ")
}

// redactURL keeps an endpoint's scheme, host and path, never user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable endpoint)"
	}
	u.User = nil
	return u.String()
}

// awsDNSSuffixes are the DNS suffixes of the AWS partitions, plain and dual
// stack (aws-sdk-go-v2 internal/endpoints/awsrulesfn/partitions.json).
var awsDNSSuffixes = []string{
	"amazonaws.com", "amazonaws.com.cn", "amazonaws.eu", "c2s.ic.gov", "sc2s.sgov.gov", "cloud.adc-e.uk", "csp.hci.ic.gov",
	"api.aws", "api.amazonwebservices.com.cn", "api.amazonwebservices.eu", "api.aws.ic.gov", "api.aws.hci.ic.gov",
	"api.aws.scloud", "api.cloud-aws.adc-e.uk",
}

// stsHostRE is an STS host below a partition's suffix: sts, sts-fips, with
// an optional region (sts.eu-west-1), or an interface VPC endpoint
// (vpce-0abc-1234.sts.eu-west-1.vpce).
var stsHostRE = regexp.MustCompile(`^(?:(?:sts|sts-fips)(?:\.[a-z0-9-]+)?|vpce-[a-z0-9-]+\.sts(?:-fips)?\.[a-z0-9-]+\.vpce)$`)

// isAWSSTSEndpoint reports whether an endpoint URL is AWS's own STS: https,
// port 443 or none, and a host that is STS's (sts., sts-fips., regional, or
// an STS interface VPC endpoint) under an AWS partition's DNS suffix. Any
// other host — a loopback emulator, a proxy, or another AWS service's host
// such as API Gateway, which anyone can make answer like STS — is not.
func isAWSSTSEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.User != nil || (u.Port() != "" && u.Port() != "443") {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, sfx := range awsDNSSuffixes {
		if rest, ok := strings.CutSuffix(host, "."+sfx); ok && stsHostRE.MatchString(rest) {
			return true
		}
	}
	return false
}
