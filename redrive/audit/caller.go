package audit

import (
	"os"
	"os/user"
	"strconv"
)

// CallerCheck says where an audit record's caller identity comes from, and
// so how far it can be trusted.
type CallerCheck string

// The caller checks.
const (
	// CallerSTS: ARN and Account are sts GetCallerIdentity's answer, from
	// the real AWS STS endpoint (see redrive.Locality): who the credentials are.
	CallerSTS CallerCheck = "sts"
	// CallerLocal: every endpoint the command uses is on this machine (the
	// local emulators): there is no IAM, STS is not called; the OS user is
	// the identity.
	CallerLocal CallerCheck = "local"
	// CallerNotChecked: the record was written before STS was called (a
	// refusal of bad flags or an unknown pipeline, or a refusal of the
	// gate's pure checks); only the OS user is known.
	CallerNotChecked CallerCheck = "not_checked"
	// CallerSTSFailed: STS was asked and did not answer; Error says why.
	CallerSTSFailed CallerCheck = "sts_failed"
)

// Caller is who ran an audited action as the machine knows it, beside the
// entry's Actor (the declared owner). In an audit record (JSON "caller"):
//
//	{"check":"sts","arn":"arn:aws:sts::123456789012:assumed-role/AgentTasksRedrive/alice","account":"123456789012","os_user":"alice"}
//	{"check":"local","os_user":"alice"}
//	{"check":"not_checked","os_user":"alice"}
//	{"check":"sts_failed","os_user":"alice","error":"..."}
//
// Records written before the field existed have no "caller"; readers must
// accept that (Entry.Caller is nil then).
type Caller struct {
	Check CallerCheck `json:"check"`
	// ARN and Account are GetCallerIdentity's (Check CallerSTS only).
	ARN     string `json:"arn,omitempty"`
	Account string `json:"account,omitempty"`
	// OSUser is the operating-system account that runs the process (for the
	// console: the one that runs it), always set: the account name
	// of the process's uid, else "uid:N". Not $USER, which anyone sets.
	OSUser string `json:"os_user"`
	// Error is why STS did not answer (Check CallerSTSFailed only).
	Error string `json:"error,omitempty"`
}

// OSUser is the operating-system account that runs this process: the
// account name of its uid (os/user), else "uid:N".
func OSUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid:" + strconv.Itoa(os.Getuid())
}

// UncheckedCaller is the caller of a record written before STS was asked:
// the OS user only.
func UncheckedCaller() Caller {
	return Caller{Check: CallerNotChecked, OSUser: OSUser()}
}
