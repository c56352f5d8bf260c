package redrive

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

func TestGate(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tags := func(owner string) map[string]string {
		return map[string]string{pipeline.TagOwner: owner, pipeline.TagPipeline: p.Name, pipeline.TagRedriveRole: "arn:aws:iam::123456789012:role/agentdlq/AgentTasksRedrive"}
	}
	local := identity{Local: true}
	aws := func(caller string) identity {
		return identity{CallerARN: caller, RedriveRole: "arn:aws:iam::123456789012:role/agentdlq/AgentTasksRedrive"}
	}
	tests := []struct {
		name string
		in   gateInput
		code redrivetype.Code // want: refusal code, "" for allowed
	}{
		{"owner, why, rate, tag: allowed locally", gateInput{Owner: p.Owner, Why: "fix v2 deployed", Rate: 10, QueueTags: tags(p.Owner), identity: local}, ""},
		{"wrong owner", gateInput{Owner: "mallory", Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: local}, redrivetype.CodeOwner},
		{"owner differs in case", gateInput{Owner: "Platform-Oncall", Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: local}, redrivetype.CodeOwner},
		{"missing why", gateInput{Owner: p.Owner, Rate: 10, QueueTags: tags(p.Owner), identity: local}, redrivetype.CodeWhy},
		{"blank why", gateInput{Owner: p.Owner, Why: " \t", Rate: 10, QueueTags: tags(p.Owner), identity: local}, redrivetype.CodeWhy},
		{"rate 0", gateInput{Owner: p.Owner, Why: "x", Rate: 0, QueueTags: tags(p.Owner), identity: local}, redrivetype.CodeRate},
		{"rate 501", gateInput{Owner: p.Owner, Why: "x", Rate: 501, QueueTags: tags(p.Owner), identity: local}, redrivetype.CodeRate},
		{"rate 500", gateInput{Owner: p.Owner, Why: "x", Rate: 500, QueueTags: tags(p.Owner), identity: local}, ""},
		{"tag disagrees with the definition", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: tags("someone-else"), identity: local}, redrivetype.CodeOwnerTag},
		{"no owner tag", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: map[string]string{}, identity: local}, redrivetype.CodeOwnerTag},
		{"tagged for another pipeline", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: map[string]string{pipeline.TagOwner: p.Owner, pipeline.TagPipeline: "agent-steps"}, identity: local}, redrivetype.CodeOwnerTag},
		{"AWS: the redrive role", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: aws("arn:aws:sts::123456789012:assumed-role/AgentTasksRedrive/alice")}, ""},
		{"AWS: another role", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: aws("arn:aws:sts::123456789012:assumed-role/Admin/alice")}, redrivetype.CodeIdentity},
		{"AWS: the role in another account", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: aws("arn:aws:sts::999999999999:assumed-role/AgentTasksRedrive/alice")}, redrivetype.CodeIdentity},
		{"AWS: an IAM user", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: aws("arn:aws:iam::123456789012:user/alice")}, redrivetype.CodeIdentity},
		{"AWS: no redrive role tag", gateInput{Owner: p.Owner, Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: identity{CallerARN: "arn:aws:sts::123456789012:assumed-role/AgentTasksRedrive/alice"}}, redrivetype.CodeIdentity},
		{"AWS: the owner check comes first", gateInput{Owner: "mallory", Why: "x", Rate: 10, QueueTags: tags(p.Owner), identity: aws("arn:aws:sts::123456789012:assumed-role/AgentTasksRedrive/alice")}, redrivetype.CodeOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			in.Pipeline = p
			err := gate(in)
			if tt.code == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrRefused)
			assert.Equal(t, tt.code, RefusalCode(err), err)
			assert.NotContains(t, err.Error(), "\n", "a one-line reason")
		})
	}
}

func TestCheckCallerByName(t *testing.T) {
	t.Parallel()
	assert.NoError(t, checkCaller("arn:aws:sts::1:assumed-role/RedriveRole/s", "RedriveRole"))
	assert.Error(t, checkCaller("arn:aws:sts::1:assumed-role/RedriveRoleX/s", "RedriveRole"))
	assert.Error(t, checkCaller("arn:aws:sts::1:assumed-role/RedriveRole/s", "arn:aws:sqs:us-east-1:1:queue"))
}

func TestIsLocalEndpoint(t *testing.T) {
	t.Parallel()
	for ep, want := range map[string]bool{
		"http://127.0.0.1:4566":                true,
		"http://localhost:9324":                true,
		"http://[::1]:4566":                    true,
		"http://127.0.0.2:80":                  true,
		"":                                     false,
		"https://sqs.us-east-1.amazonaws.com":  false,
		"http://10.0.0.5:4566":                 false,
		"http://localhost.evil.example.com:80": false,
		"not a url":                            false,
	} {
		assert.Equal(t, want, isLocalEndpoint(ep), ep)
	}
}

func TestCheckRedrivePolicies(t *testing.T) {
	t.Parallel()
	hot, dlq := "arn:aws:sqs:us-east-1:1:hot", "arn:aws:sqs:us-east-1:1:hot-dlq"
	rp := `{"deadLetterTargetArn":"` + dlq + `","maxReceiveCount":4}`
	tests := []struct {
		name, hotPolicy, allow string
		ok                     bool
	}{
		{"byQueue lists the hot queue", rp, `{"redrivePermission":"byQueue","sourceQueueArns":["` + hot + `"]}`, true},
		{"no allow policy", rp, "", true},
		{"allowAll", rp, `{"redrivePermission":"allowAll"}`, true},
		{"denyAll", rp, `{"redrivePermission":"denyAll"}`, false},
		{"byQueue without the hot queue", rp, `{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:us-east-1:1:other"]}`, false},
		{"hot queue dead-letters elsewhere", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:other-dlq","maxReceiveCount":4}`, "", false},
		{"hot queue has no redrive policy", "", "", false},
		{"unreadable policy", "{", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRedrivePolicies(hot, dlq, tt.hotPolicy, tt.allow)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.Equal(t, redrivetype.CodeDestination, RefusalCode(err), err)
			}
		})
	}
}
