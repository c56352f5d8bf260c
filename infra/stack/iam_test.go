package stack

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/pipeline"
)

// grant is one Allow or Deny of an IAM identity policy, read from the template.
type grant struct {
	effect    string
	actions   []string
	resources []string
	condition map[string]any
}

// roleGrants reads every AWS::IAM::Policy, the roles' inline policies and
// their managed policy ARNs, by role logical id.
func (s *synthesized) roleGrants(t *testing.T) (map[string][]grant, map[string][]string) {
	t.Helper()
	out := map[string][]grant{}
	managed := map[string][]string{}
	add := func(role string, doc any) {
		for _, st := range statements(doc) {
			cond, _ := st["Condition"].(map[string]any)
			out[role] = append(out[role], grant{effect: st["Effect"].(string), actions: strs(st["Action"]), resources: strs(st["Resource"]), condition: cond})
			assert.Nil(t, st["NotAction"], "no NotAction in %s's policies", role)
		}
	}
	ids, policies := s.resources("AWS::IAM::Policy")
	for _, id := range ids {
		p := props(policies[id])
		for _, r := range p["Roles"].([]any) {
			role := strings.TrimSuffix(strings.TrimPrefix(flat(r), "${Ref:"), "}")
			add(role, p["PolicyDocument"])
		}
	}
	rids, roles := s.resources("AWS::IAM::Role")
	for _, id := range rids {
		p := props(roles[id])
		if inline, ok := p["Policies"].([]any); ok {
			for _, pol := range inline {
				add(id, pol.(map[string]any)["PolicyDocument"])
			}
		}
		managed[id] = strs(p["ManagedPolicyArns"])
		if _, ok := out[id]; !ok {
			out[id] = nil
		}
	}
	return out, managed
}

// allowed lists the actions a role is allowed, with the resources of each.
func allowed(gs []grant) map[string][]string {
	out := map[string][]string{}
	for _, g := range gs {
		if g.effect != "Allow" {
			continue
		}
		for _, a := range g.actions {
			out[a] = append(out[a], g.resources...)
		}
	}
	return out
}

// roleOf finds a pipeline's role by its construct id (WorkerRole, RedriveRole).
func (s *synthesized) roleOf(t *testing.T, pipelineName, construct string) string {
	t.Helper()
	ids, roles := s.resources("AWS::IAM::Role")
	for _, id := range ids {
		if tags(roles[id])[pipeline.TagPipeline] == pipelineName && strings.Contains(id, construct) {
			return id
		}
	}
	t.Fatalf("no %s for %s", construct, pipelineName)
	return ""
}

func (s *synthesized) triageRole(t *testing.T) string {
	t.Helper()
	ids, _ := s.resources("AWS::IAM::Role")
	for _, id := range ids {
		if strings.HasPrefix(id, s.prefix+"TriageRole") {
			return id
		}
	}
	t.Fatal("no triage role")
	return ""
}

func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestIAMBoundaries(t *testing.T) {
	for _, name := range allStacks {
		s := fx.stacks[name]
		t.Run(name, func(t *testing.T) {
			grants, managed := s.roleGrants(t)
			triage := s.triageRole(t)
			redrive := map[string]bool{}
			for _, def := range s.defs {
				redrive[s.roleOf(t, def.Name, "RedriveRole")] = true
			}

			for role, gs := range grants {
				assert.Empty(t, managed[role], "%s uses no managed policy", role)
				for a, res := range allowed(gs) {
					assert.NotEqual(t, "*", a, "%s: no Action *", role)
					assert.False(t, strings.HasSuffix(a, ":*"), "%s: no service-wide wildcard %s", role, a)
					if redrive[role] && (a == "sqs:ListQueues" || a == "lambda:ListEventSourceMappings") {
						assert.Equal(t, []string{"*"}, res, "%s has no resource-level permission", a)
						continue
					}
					if strings.HasPrefix(a, "sqs:") || strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "sns:") {
						assert.NotContains(t, res, "*", "%s: %s on every resource", role, a)
					}
				}
				// Only a redrive role can start, list or cancel a move task.
				if !redrive[role] {
					for _, a := range MoveTaskActions {
						assert.NotContains(t, allowed(gs), a, "%s must not be allowed %s", role, a)
					}
				}
			}
			require.Len(t, redrive, len(s.defs))
			for role := range redrive {
				assert.Contains(t, allowed(grants[role]), "sqs:StartMessageMoveTask", "the redrive role %s starts move tasks", role)
			}

			// The triage is read-only on the queues.
			tr := allowed(grants[triage])
			for _, a := range []string{"sqs:DeleteMessage", "sqs:DeleteMessageBatch", "sqs:SendMessage", "sqs:SendMessageBatch",
				"sqs:PurgeQueue", "sqs:StartMessageMoveTask", "sqs:CancelMessageMoveTask", "sqs:SetQueueAttributes",
				"sqs:DeleteQueue", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "s3:DeleteObject"} {
				assert.NotContains(t, tr, a, "the triage role must not hold %s", a)
			}
			var dlqARNs []string
			for _, def := range s.defs {
				dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
				dlqARNs = append(dlqARNs, "${"+dlqID+".Arn}")
			}
			for _, a := range []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"} {
				assert.ElementsMatch(t, dlqARNs, tr[a], "the triage's %s is on the DLQs only", a)
			}
			assert.Equal(t, []string{"dynamodb:GetItem"}, filter(keys(tr), "dynamodb:"), "the triage reads ledger entries one by one")
			assert.Contains(t, tr, "sns:Publish")
			assert.NotContains(t, tr, "cloudwatch:PutMetricData", "metrics go through EMF in the logs")
			// Its one read of CloudWatch (issue 32): the worker's Processed
			// metric, for the report's SLO budget spent. GetMetricData has no
			// resource-level permission: "*", in a statement of its own, held
			// to the stack's region; no other CloudWatch action (no alarm
			// changed, deleted or silenced).
			assert.Equal(t, []string{"cloudwatch:GetMetricData"}, filter(keys(tr), "cloudwatch:"), "the triage reads metrics, nothing more")
			assert.Equal(t, []string{"*"}, tr["cloudwatch:GetMetricData"])
			for _, g := range grants[triage] {
				if slices.Contains(g.actions, "cloudwatch:GetMetricData") {
					assert.Equal(t, []string{"cloudwatch:GetMetricData"}, g.actions, "a statement of its own, so that its * covers nothing else")
					eq, _ := g.condition["StringEquals"].(map[string]any)
					assert.Equal(t, "${Ref:AWS::Region}", flat(eq["aws:RequestedRegion"]), "held to the stack's region")
				}
			}
			// Its bucket reads and writes are its reports and eval exports
			// only (issue 28): never the redrive's repairs/ (the unredacted
			// originals) or audit/, never the worker's evidence/ (claim
			// checks a redrive trusts).
			bucket := `^\$\{` + s.prefix + `SharedEvalBucket[0-9A-F]+\.Arn\}`
			var theirs []string
			for _, def := range s.defs {
				theirs = append(theirs, "/"+def.Name+"/audit/*", "/"+def.Name+"/evidence/*", "/"+def.Name+"/repairs/*")
			}
			for _, a := range []string{"s3:PutObject", "s3:GetObject"} {
				require.Len(t, tr[a], 2*len(s.defs), a)
				var own []string
				for _, r := range tr[a] {
					assert.Regexp(t, bucket+`/[a-z0-9-]+/(reports|\?\?\?\?-\?\?-\?\?)/\*$`, r, a)
					own = append(own, regexp.MustCompile(bucket).ReplaceAllString(r, ""))
				}
				for _, def := range s.defs {
					assert.Contains(t, own, "/"+def.Name+"/reports/*", a)
					assert.Contains(t, own, "/"+def.Name+"/????-??-??/*", a)
				}
			}
			var denied []string
			for _, g := range grants[triage] {
				if g.effect == "Deny" && slices.Contains(g.actions, "s3:PutObject") && slices.Contains(g.actions, "s3:GetObject") {
					for _, r := range g.resources {
						denied = append(denied, regexp.MustCompile(bucket).ReplaceAllString(r, ""))
					}
				}
			}
			assert.ElementsMatch(t, theirs, denied, "the triage is denied the redrive's and the worker's prefixes")

			for _, def := range s.defs {
				hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
				dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
				hot, dlq := "${"+hotID+".Arn}", "${"+dlqID+".Arn}"

				// The worker: consume its hot queue, send to its DLQ, the ledger's items, its logs.
				w := allowed(grants[s.roleOf(t, def.Name, "WorkerRole")])
				// No PutItem or DeleteItem: the ledger changes entries with conditional UpdateItem only.
				wantWorker := []string{"dynamodb:GetItem", "dynamodb:UpdateItem",
					"kms:GenerateDataKey", // the eval bucket's key, for claim checks
					"logs:CreateLogStream", "logs:PutLogEvents", "s3:PutObject",
					"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"}
				if name == kmsStack {
					wantWorker = append(wantWorker, "kms:Decrypt")
				}
				assert.ElementsMatch(t, wantWorker, keys(w))
				for _, a := range []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"} {
					assert.Equal(t, []string{hot}, w[a], "worker %s on its hot queue only", a)
				}
				if def.RetryAfterRequeues > 0 {
					assert.ElementsMatch(t, []string{dlq, hot}, w["sqs:SendMessage"], "worker sends to its DLQ, and requeues to its hot queue")
				} else {
					assert.Equal(t, []string{dlq}, w["sqs:SendMessage"], "worker sends to its DLQ only (no retry_after_requeues)")
				}
				require.Len(t, w["s3:PutObject"], 1)
				assert.True(t, strings.HasSuffix(w["s3:PutObject"][0], "/"+def.Name+"/evidence/*"), "worker's claim checks under <pipeline>/evidence/ only: %s", w["s3:PutObject"][0])

				// The redrive role: move tasks and the selective redrive on its own queues.
				rr := s.roleOf(t, def.Name, "RedriveRole")
				r := allowed(grants[rr])
				for _, a := range append(MoveTaskActions, "sqs:ReceiveMessage", "sqs:DeleteMessage") {
					assert.Equal(t, []string{dlq}, r[a], "redrive %s on its DLQ only", a)
				}
				assert.Equal(t, []string{hot}, r["sqs:SendMessage"], "redrive sends to its hot queue only")
				// It reads claim checks under <pipeline>/evidence/ and its own audit
				// under <pipeline>/audit/ (plan and reject), nothing else.
				require.Len(t, r["s3:GetObject"], 2)
				var reads []string
				for _, arn := range r["s3:GetObject"] {
					_, path, _ := strings.Cut(arn, "/")
					reads = append(reads, "/"+path)
				}
				assert.ElementsMatch(t, []string{"/" + def.Name + "/evidence/*", "/" + def.Name + "/audit/*"}, reads, "redrive reads claim checks and its audit only")
				assert.Equal(t, []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, filter(keys(r), "dynamodb:"), "no BatchGetItem")
				// UpdateItem writes the redrive count, or reconciles, each in a
				// statement of its own restricted to its attributes.
				var updates []any
				for _, g := range grants[rr] {
					if slices.Contains(g.actions, "dynamodb:UpdateItem") {
						assert.Equal(t, []string{"dynamodb:UpdateItem"}, g.actions, "UpdateItem has its own statements")
						updates = append(updates, g.condition)
					}
				}
				wantUpdates := []any{
					map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": toAny(RedriveLedgerAttributes)}},
					map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": toAny(ReconcileLedgerAttributes)}},
				}
				if def.Breaker.Enabled {
					// agentdlq breaker open|close: breaker items only (issue 32).
					wantUpdates = append(wantUpdates, map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": toAny(BreakerLedgerAttributes)},
						"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"breaker:*"}}})
				}
				assert.ElementsMatch(t, wantUpdates, updates, "the redrive's UpdateItem is restricted to %v (the redrive count), %v (reconcile) or %v on breaker items", RedriveLedgerAttributes, ReconcileLedgerAttributes, BreakerLedgerAttributes)
				// Pause and resume: the worker's event source mapping only.
				esmID, _ := s.resources("AWS::Lambda::EventSourceMapping")
				var esm string
				for _, id := range esmID {
					if strings.HasPrefix(id, s.prefix+pipelineIDPart(def.Name)+"HotQueueSource") {
						esm = id
					}
				}
				require.NotEmpty(t, esm, "the worker's event source mapping")
				require.Len(t, r[PauseAction], 1)
				assert.Contains(t, r[PauseAction][0], ":event-source-mapping:${Ref:"+esm+"}", "%s on the worker's mapping only", PauseAction)
				// It writes its audit and the originals of repaired tasks, nothing else.
				var puts []string
				for _, res := range r["s3:PutObject"] {
					puts = append(puts, res[strings.LastIndex(res, "/"+def.Name+"/"):])
				}
				assert.ElementsMatch(t, []string{"/" + def.Name + "/audit/*", "/" + def.Name + "/repairs/*"}, puts, "redrive writes its audit and repaired originals only")
				assert.NotContains(t, r, "sqs:PurgeQueue")

				// Who may assume it.
				_, roles := s.resources("AWS::IAM::Role")
				trust := statements(props(roles[rr])["AssumeRolePolicyDocument"])
				require.Len(t, trust, 1)
				principal := flat(trust[0]["Principal"].(map[string]any)["AWS"])
				assert.Equal(t, redrivePrincipal(name, def.Name), principal, "the named redrive principal, and no one else")
				assert.Nil(t, trust[0]["Condition"], "no tag condition: a principal may set its own tags")
			}
			// No role carries the owner tag: it must never stand for the owner.
			rids, roles := s.resources("AWS::IAM::Role")
			for _, id := range rids {
				assert.NotContains(t, tags(roles[id]), pipeline.TagOwner, "role %s", id)
			}
		})
	}
}

func filter(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// pipelineIDPart is how a pipeline name shows in its logical ids.
func pipelineIDPart(name string) string { return strings.ReplaceAll(name, "-", "") }
