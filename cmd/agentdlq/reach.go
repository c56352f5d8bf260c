package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aws/smithy-go/logging"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/local/runner"
)

// Where a command that could not reach AWS or the emulators got stuck: a
// sentence for the operator, printed under the error (and "hint" with -o
// json). From the error's types, not its words: awscfg.CredentialsError (no
// credentials), and the *url.Error of a request that was never answered,
// with its *net.OpError or *net.DNSError (an endpoint down, or AWS out of
// reach). It names make local-up and eval "$(make -s local-env)" when this
// checkout has a local state directory (scripts/local.sh: .local/, whose
// env file exists while the emulators run).

// localEnvCmd is how a shell is pointed at the running emulators.
const localEnvCmd = `eval "$(make -s local-env)"`

// localState is what scripts/local.sh left in this checkout: the state
// directory, and the endpoints of its env file while the emulators run.
type localState struct {
	dir       string
	endpoints map[string]string // AWS_ENDPOINT_URL_* → URL; nil when not running
}

// findLocalState reads the checkout's local state directory (ok false: none).
func findLocalState() (localState, bool) {
	dir, err := localStateDir()
	if err != nil {
		return localState{}, false
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return localState{}, false
	}
	s := localState{dir: dir}
	if b, err := os.ReadFile(filepath.Join(dir, "env")); err == nil {
		s.endpoints = map[string]string{}
		for k, v := range runner.ParseExports(string(b)) {
			if strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
				s.endpoints[k] = v
			}
		}
	}
	return s, true
}

func (s localState) running() bool { return s.endpoints != nil }

// serves reports whether endpoint (scheme://host:port) is one of the running emulators'.
func (s localState) serves(endpoint string) bool {
	for _, v := range s.endpoints {
		if strings.TrimRight(v, "/") == endpoint {
			return true
		}
	}
	return false
}

// reachHint is the sentence that says why err could not reach AWS or the
// emulators and what to run, or "" when err is something else.
func reachHint(err error) string {
	if err == nil {
		return ""
	}
	local, hasLocal := findLocalState()
	if awscfg.IsCredentials(err) {
		switch {
		case hasLocal && local.running() && endpointSet():
			return "no AWS credentials in this shell (the local emulators take any): " + localEnvCmd + " sets their dummy ones with their endpoints"
		case hasLocal && local.running():
			return "no AWS credentials in this shell, and no endpoint: it is not pointed at the local emulators, which run for this checkout (" + local.dir + "); " + localEnvCmd + " points it at them"
		case hasLocal:
			return "no AWS credentials in this shell: for the local emulators, start them with make local-up (or make demo), then " + localEnvCmd + "; for AWS, configure credentials as for the AWS CLI (aws configure, aws sso login, AWS_PROFILE or --profile)"
		}
		return "no AWS credentials in this shell (none in the environment, the shared config and credentials files or the profile, and no container or EC2 role answered): configure them as for the AWS CLI (aws configure, aws sso login, AWS_PROFILE or --profile)"
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return ""
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil || u.Host == "" {
		return ""
	}
	endpoint := u.Scheme + "://" + u.Host
	var oe *net.OpError
	var de *net.DNSError
	down := errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &oe) && oe.Op == "dial")
	unresolved := errors.As(err, &de)
	if !down && !unresolved {
		return ""
	}
	if awsHost(u.Hostname()) {
		// No endpoint set: the call went to AWS, which did not answer.
		what := fmt.Sprintf("no endpoint is set, so this command went to AWS (%s), which it could not reach", u.Host)
		switch {
		case hasLocal && local.running():
			return what + "; the local emulators run for this checkout: " + localEnvCmd + " points this shell at them"
		case hasLocal:
			return what + "; for the local emulators: make local-up, then " + localEnvCmd
		}
		return what + ": check the network (or set AWS_ENDPOINT_URL_<SERVICE> for an emulator)"
	}
	what := "nothing answers at " + endpoint + " (the endpoint this shell sets, AWS_ENDPOINT_URL*)"
	switch {
	case hasLocal && local.running() && local.serves(endpoint):
		return what + ": the local emulators recorded in " + local.dir + " are not answering; restart them with make local-up (scripts/local.sh status says which run)"
	case hasLocal && local.running():
		return what + ": the local emulators run on other ports; " + localEnvCmd + " points this shell at them"
	case hasLocal:
		return what + ": the local emulators are not running; start them with make local-up (or make demo), then " + localEnvCmd
	}
	return what + ": start the emulator or server it names, or unset the variable to use AWS"
}

// endpointSet reports whether this process names an endpoint of its own
// (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_<SERVICE>).
func endpointSet() bool {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL") && !strings.HasSuffix(kv, "=") {
			return true
		}
	}
	return false
}

// awsHost reports whether host is one of AWS's own service domains.
func awsHost(host string) bool {
	for _, d := range []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".c2s.ic.gov", ".sc2s.sgov.gov"} {
		if strings.HasSuffix(host, d) {
			return true
		}
	}
	return false
}

// sdkLogger sends the AWS SDK's own log lines (the "falling back to
// IMDSv1" warning of a shell without credentials off EC2 among them) to
// the command's log at info: shown with --verbose. What they announce
// comes back as the command's error, with reachHint's sentence.
type sdkLogger struct{ g *globalFlags }

func (s sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	s.g.log().Info("aws sdk: "+fmt.Sprintf(format, v...), slog.String("sdk_level", string(c)))
}
