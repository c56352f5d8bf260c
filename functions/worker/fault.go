package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Fault is args.fault: a failure the sample tools inject on request.
type Fault struct {
	Retryable    bool   `json:"retryable"`
	Status       int    `json:"status"`
	Error        string `json:"error"`
	UntilReceive int    `json:"until_receive"`
	Kind         string `json:"kind"`
	Code         string `json:"code"`
	Dependency   string `json:"dependency"`
}

// The fault kinds.
const (
	FaultTimeoutAfterEffect = "timeout_after_effect"
	FaultAuth               = "auth"
	FaultDependencyOpen     = "dependency_open"
	FaultPolicyLimit        = "policy_limit"
	FaultSignatureInvalid   = "signature_invalid"
	FaultGuardrailReject    = "guardrail_reject"
	FaultPanic              = "panic"
	FaultError              = "error"
)

// faultTail is searched without its opening quote: bytes.Index is fast on a
// rare first byte and slow on '"', the commonest byte of JSON.
var faultTail = []byte(`fault"`)

// mentionsFault reports whether args contain the string "fault" (quoted),
// the only way a "fault" key can appear.
func mentionsFault(args []byte) bool {
	for s := args; ; {
		i := bytes.Index(s, faultTail)
		if i < 0 {
			return false
		}
		if i > 0 && s[i-1] == '"' {
			return true
		}
		s = s[i+len(faultTail):]
	}
}

// ParseFault returns args.fault, or nil when args has none. The args are
// decoded only when their bytes contain "fault", so the hot path pays one
// byte search.
func ParseFault(args []byte) (*Fault, error) {
	if !mentionsFault(args) {
		return nil, nil
	}
	var holder struct {
		Fault *Fault `json:"fault"`
	}
	if err := json.Unmarshal(args, &holder); err != nil {
		return nil, fmt.Errorf("args.fault: %w", err)
	}
	return holder.Fault, nil
}

// statusError is an upstream HTTP failure.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return "upstream returned " + strconv.Itoa(e.status)
}

var errNoFaultKind = errors.New("fault has neither retryable:true nor a known kind")
