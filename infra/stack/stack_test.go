package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

func like(m map[string]any) assertions.Matcher { return assertions.Match_ObjectLike(&m) }

func TestResourceCounts(t *testing.T) {
	require.True(t, fx.synthOK)
	for _, name := range []string{mainStack, kmsStack} {
		s := fx.stacks[name]
		n := float64(len(s.defs))
		triageFunctions := float64(len(s.stack.Triage.Functions))
		breakers := 0.0 // a breaker-open alarm for each pipeline with the breaker on
		for _, d := range s.defs {
			if d.Breaker.Enabled {
				breakers++
			}
		}
		for typ, want := range map[string]float64{
			"AWS::SQS::Queue":                                2 * n, // a hot queue and its own DLQ per pipeline
			"AWS::SQS::QueuePolicy":                          2 * n,
			"AWS::Lambda::Function":                          n + triageFunctions, // a worker per pipeline, and the triage
			"AWS::Lambda::EventSourceMapping":                n,
			"AWS::CloudWatch::Alarm":                         float64(len(AllAlarms()))*n + breakers,
			"AWS::CloudWatch::Dashboard":                     n,
			"AWS::ApplicationSignals::ServiceLevelObjective": n, // the dead-letter SLO
			"AWS::SNS::Topic":                                n,
			"AWS::DynamoDB::Table":                           1,
			"AWS::S3::Bucket":                                2, // eval bucket and its access logs
			"AWS::Events::Rule":                              2 * n,
		} {
			jsiiCheck(t, name+" "+typ, func() { s.assert.ResourceCountIs(jsii.String(typ), jsii.Number(want)) })
		}
	}
}

func TestEnvironmentAgnostic(t *testing.T) {
	require.True(t, fx.synthOK)
	for _, s := range fx.stacks {
		env := s.stack.Environment()
		assert.Equal(t, "aws://unknown-account/unknown-region", *env, "%s must synthesize without credentials or a pinned account", s.name)
		b, _ := json.Marshal(s.tmpl)
		assert.NotContains(t, string(b), "123456789012:queue", "no hard-coded account in %s", s.name)
	}
}

func TestHotQueueAndDLQ(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		hotID, hot := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		dlqID, dlq := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		hp, dp := props(hot), props(dlq)
		withDefaults := def
		withDefaults.ApplyDefaults()

		// The redrive policy names the pipeline's own DLQ with maxReceiveCount 3–5.
		jsiiCheck(t, "hot queue", func() {
			s.assert.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(map[string]any{
				"RedrivePolicy": map[string]any{
					"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}},
					"maxReceiveCount":     def.MaxReceiveCount,
				},
				"MessageRetentionPeriod": def.RetentionHours * 3600,
				"VisibilityTimeout":      def.VisibilityTimeoutSeconds,
				"MaximumMessageSize":     withDefaults.MaxMessageBytes,
			}))
		})
		// The DLQ takes the dead-letter reserve more than the hot queue,
		// and the defaults reach SQS's 1 MiB.
		assert.Equal(t, float64(withDefaults.MaxMessageBytes), hp["MaximumMessageSize"])
		assert.Equal(t, float64(withDefaults.MaxMessageBytes+deadletter.Reserve), dp["MaximumMessageSize"])
		switch withDefaults.MaxMessageBytes {
		case pipeline.DefaultMaxMessageBytes:
			assert.Equal(t, float64(1_032_192), hp["MaximumMessageSize"])
			assert.Equal(t, float64(1_048_576), dp["MaximumMessageSize"])
		case 256 * 1024:
			assert.Equal(t, float64(262_144+16_384), dp["MaximumMessageSize"])
		default:
			t.Errorf("a pipeline of the fixture with max_message_bytes %d", withDefaults.MaxMessageBytes)
		}
		assert.Equal(t, float64(def.MaxReceiveCount), hp["RedrivePolicy"].(map[string]any)["maxReceiveCount"])
		assert.GreaterOrEqual(t, def.MaxReceiveCount, 3)
		assert.LessOrEqual(t, def.MaxReceiveCount, 5)
		assert.Equal(t, float64(96*3600), hp["MessageRetentionPeriod"], "the hot queue keeps the 4-day default")
		assert.Equal(t, float64(14*24*3600), dp["MessageRetentionPeriod"], "the DLQ keeps 14 days")
		assert.Greater(t, dp["MessageRetentionPeriod"], hp["MessageRetentionPeriod"], "DLQ retention must exceed the source's")
		assert.Nil(t, dp["RedrivePolicy"], "a DLQ has no DLQ of its own")

		// Same type: FIFO with FIFO, standard with standard.
		assert.Equal(t, def.FIFO, hp["FifoQueue"] == true)
		assert.Equal(t, def.FIFO, dp["FifoQueue"] == true)
		if def.FIFO {
			assert.True(t, strings.HasSuffix(hp["QueueName"].(string), ".fifo"))
		}

		// The DLQ accepts dead letters from its own source only.
		rap := dp["RedriveAllowPolicy"].(map[string]any)
		assert.Equal(t, "byQueue", rap["redrivePermission"])
		sources := rap["sourceQueueArns"].([]any)
		require.Len(t, sources, 1)
		assert.True(t, strings.HasSuffix(flat(sources[0]), ":"+hp["QueueName"].(string)),
			"RedriveAllowPolicy names %s, want the hot queue %s", flat(sources[0]), hp["QueueName"])
		_ = hotID

		// Server-side encryption: SSE-SQS by default, the KMS key in the kms stack.
		for _, q := range []map[string]any{hp, dp} {
			if s.name == kmsStack {
				assert.NotNil(t, q["KmsMasterKeyId"], "KMS-encrypted queue")
			} else {
				assert.Equal(t, true, q["SqsManagedSseEnabled"], "SSE-SQS")
			}
		}
	})
}

// queuePolicy returns the statements of the policy attached to a queue.
func (s *synthesized) queuePolicy(t *testing.T, queueID string) []map[string]any {
	t.Helper()
	ids, rs := s.resources("AWS::SQS::QueuePolicy")
	for _, id := range ids {
		p := props(rs[id])
		for _, q := range p["Queues"].([]any) {
			if flat(q) == "${Ref:"+queueID+"}" {
				return statements(p["PolicyDocument"])
			}
		}
	}
	t.Fatalf("no queue policy for %s", queueID)
	return nil
}

func statements(doc any) []map[string]any {
	var out []map[string]any
	for _, st := range doc.(map[string]any)["Statement"].([]any) {
		out = append(out, st.(map[string]any))
	}
	return out
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, flat(e))
		}
		return out
	case nil:
		return nil
	default:
		return []string{flat(x)}
	}
}

func hasTLSDeny(sts []map[string]any) bool {
	for _, st := range sts {
		if st["Effect"] != "Deny" {
			continue
		}
		if c, ok := st["Condition"].(map[string]any)["Bool"].(map[string]any); ok && c["aws:SecureTransport"] == "false" {
			return true
		}
	}
	return false
}

func TestQueuePolicies(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		redriveID := s.roleOf(t, def.Name, "RedriveRole")
		assert.True(t, hasTLSDeny(s.queuePolicy(t, hotID)), "hot queue: TLS only")
		dlqPolicy := s.queuePolicy(t, dlqID)
		assert.True(t, hasTLSDeny(dlqPolicy), "DLQ: TLS only")

		var deny map[string]any
		for _, st := range dlqPolicy {
			if st["Sid"] == "OnlyTheRedriveRoleMovesOrDeletesDeadLetters" {
				deny = st
			}
		}
		require.NotNil(t, deny, "the DLQ policy denies the move-task calls to all but the redrive role")
		assert.Equal(t, "Deny", deny["Effect"])
		assert.Equal(t, map[string]any{"AWS": "*"}, deny["Principal"])
		for _, a := range append(MoveTaskActions, "sqs:DeleteMessage", "sqs:PurgeQueue") {
			assert.Contains(t, strs(deny["Action"]), a)
		}
		cond := deny["Condition"].(map[string]any)["ArnNotEquals"].(map[string]any)
		assert.Equal(t, "${"+redriveID+".Arn}", flat(cond["aws:PrincipalArn"]), "the exception is the pipeline's redrive role")
		assert.Equal(t, map[string]any{"aws:ViaAWSService": "false"}, deny["Condition"].(map[string]any)["BoolIfExists"],
			"and SQS's own calls on the role's behalf during a move task")
		assert.Len(t, deny["Condition"], 2)

		// The queue itself is the deployer's alone.
		var deployer map[string]any
		for _, st := range dlqPolicy {
			if st["Sid"] == "OnlyTheDeployerChangesOrDeletesTheDLQ" {
				deployer = st
			}
		}
		require.NotNil(t, deployer, "the DLQ policy denies changing or deleting the queue to all but the deployer")
		assert.Equal(t, "Deny", deployer["Effect"])
		assert.Equal(t, map[string]any{"AWS": "*"}, deployer["Principal"])
		assert.ElementsMatch(t, []string{"sqs:SetQueueAttributes", "sqs:DeleteQueue", "sqs:AddPermission", "sqs:RemovePermission",
			"sqs:TagQueue", "sqs:UntagQueue"}, strs(deployer["Action"]), "the tags too: the gate reads them")
		want := `{"Fn::Sub":"arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-hnb659fds-cfn-exec-role-${AWS::AccountId}-${AWS::Region}"}`
		if s.name == kmsStack {
			want = configuredDeployer
		}
		assert.Equal(t, map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": "REPLACED"}}, replaceLeaf(deployer["Condition"], "aws:PrincipalArn"))
		got := deployer["Condition"].(map[string]any)["ArnNotEquals"].(map[string]any)["aws:PrincipalArn"]
		assert.Equal(t, want, flat(got), "the exception is the principal that deploys the stack")
	})
}

// replaceLeaf returns a copy of a condition with the value of key replaced,
// so that its shape can be compared.
func replaceLeaf(v any, key string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		if k == key {
			out[k] = "REPLACED"
			continue
		}
		out[k] = replaceLeaf(x, key)
	}
	return out
}

func TestTags(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		for _, role := range []string{"hot", "dlq"} {
			_, q := s.resourceOf(t, "AWS::SQS::Queue", def.Name, role)
			assert.Equal(t, def.Owner, tags(q)[pipeline.TagOwner])
		}
		// The DLQ names its redrive role for the CLI's identity check.
		_, dlq := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		var roleTag any
		for _, tg := range props(dlq)["Tags"].([]any) {
			if tg.(map[string]any)["Key"] == pipeline.TagRedriveRole {
				roleTag = tg.(map[string]any)["Value"]
			}
		}
		assert.Equal(t, "${"+s.roleOf(t, def.Name, "RedriveRole")+".Arn}", flat(roleTag))
		for _, typ := range []string{"AWS::Lambda::Function", "AWS::SNS::Topic", "AWS::Lambda::EventSourceMapping"} {
			_, r := s.resourceOf(t, typ, def.Name, "")
			assert.Equal(t, def.Owner, tags(r)[pipeline.TagOwner], typ)
		}
		ids, roles := s.resources("AWS::IAM::Role")
		n := 0
		for _, id := range ids {
			if tags(roles[id])[pipeline.TagPipeline] == def.Name {
				n++
				assert.NotContains(t, tags(roles[id]), pipeline.TagOwner, "%s: a role never carries the owner tag", id)
			}
		}
		assert.Equal(t, 2, n, "worker and redrive roles carry the pipeline's tag")
	})
}

func TestWorker(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		fnID, fn := s.resourceOf(t, "AWS::Lambda::Function", def.Name, "")
		hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		p := props(fn)
		assert.Equal(t, "provided.al2023", p["Runtime"])
		assert.Equal(t, []any{"arm64"}, p["Architectures"])
		assert.Equal(t, "bootstrap", p["Handler"])
		assert.Equal(t, float64(def.WorkerTimeoutSeconds), p["Timeout"])
		assert.Equal(t, float64(def.WorkerMemoryMB), p["MemorySize"])

		// Visibility timeout at least six times the worker's timeout.
		_, hot := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		assert.GreaterOrEqual(t, props(hot)["VisibilityTimeout"].(float64), 6*p["Timeout"].(float64))

		// The environment is exactly docs/wiring.md's.
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		assert.Equal(t, []string{"AGENTDLQ_DLQ_ARN", "AGENTDLQ_DLQ_MAX_MESSAGE_BYTES", "AGENTDLQ_DLQ_URL", "AGENTDLQ_EVIDENCE_BUCKET", "AGENTDLQ_HOT_QUEUE_ARN", "AGENTDLQ_HOT_QUEUE_URL",
			"AGENTDLQ_LEDGER_TABLE", "AGENTDLQ_PIPELINE_JSON", "AGENTDLQ_WORKER_VERSION", "GOMAXPROCS", "GOMEMLIMIT"}, keys)
		// The worker's dead letters may be as large as its DLQ takes, and
		// it reads that size as the worker's main does.
		_, dlq := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		assert.Equal(t, strconv.Itoa(int(props(dlq)["MaximumMessageSize"].(float64))), env[pipeline.EnvDLQMaxMessageBytes])
		w := def
		w.ApplyDefaults()
		n, err := w.WorkerDLQMaxMessageBytes(func(k string) string { s, _ := env[k].(string); return s })
		require.NoError(t, err)
		assert.Equal(t, props(dlq)["MaximumMessageSize"], float64(n))
		// The Go runtime's soft limit: 90% of the function's memory, in MiB.
		assert.Equal(t, GoMemLimit(def.WorkerMemoryMB), env["GOMEMLIMIT"])
		assert.Equal(t, GoMaxProcs(def.WorkerMemoryMB), env["GOMAXPROCS"])
		assert.Equal(t, "${"+hotID+".Arn}", flat(env["AGENTDLQ_HOT_QUEUE_ARN"]))
		assert.Equal(t, "${Ref:"+hotID+"}", flat(env["AGENTDLQ_HOT_QUEUE_URL"]))
		assert.Equal(t, "${"+dlqID+".Arn}", flat(env["AGENTDLQ_DLQ_ARN"]))
		assert.Equal(t, "${Ref:"+dlqID+"}", flat(env["AGENTDLQ_DLQ_URL"]))
		assert.True(t, strings.HasPrefix(flat(env["AGENTDLQ_LEDGER_TABLE"]), "${Ref:"+s.prefix+"SharedLedger"))
		assert.Equal(t, "test", env["AGENTDLQ_WORKER_VERSION"])
		assert.True(t, strings.HasPrefix(flat(env["AGENTDLQ_EVIDENCE_BUCKET"]), "${Ref:"+s.prefix+"SharedEvalBucket"), "claim checks go to the eval bucket")
		// AGENTDLQ_PIPELINE_JSON is the entry with defaults applied, and it
		// parses back into the same pipeline.
		got, err := pipeline.Parse([]byte(`{"version":1,"pipelines":[` + env["AGENTDLQ_PIPELINE_JSON"].(string) + `]}`))
		require.NoError(t, err)
		want := def
		want.ApplyDefaults()
		assert.Empty(t, cmp.Diff(want, got.Pipelines[0], cmpopts.EquateEmpty()))

		// The event source: partial batch responses, batch size, window and
		// concurrency (or provisioned pollers) from the pipeline, and its
		// own event counts on.
		m := map[string]any{
			"EventSourceArn":        map[string]any{"Fn::GetAtt": []any{hotID, "Arn"}},
			"FunctionName":          map[string]any{"Ref": fnID},
			"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
			"BatchSize":             def.BatchSize,
			"MetricsConfig":         map[string]any{"Metrics": []any{"EventCount"}},
		}
		if def.ProvisionedPollers != nil {
			m["ProvisionedPollerConfig"] = map[string]any{"MinimumPollers": def.ProvisionedPollers.Minimum, "MaximumPollers": def.ProvisionedPollers.Maximum}
		} else {
			m["ScalingConfig"] = map[string]any{"MaximumConcurrency": def.MaxConcurrency}
		}
		if def.BatchWindowSeconds > 0 {
			m["MaximumBatchingWindowInSeconds"] = def.BatchWindowSeconds
		}
		jsiiCheck(t, "event source mapping", func() {
			s.assert.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(m))
		})
		_, esm := s.resourceOf(t, "AWS::Lambda::EventSourceMapping", def.Name, "")
		assert.Equal(t, []any{"ReportBatchItemFailures"}, props(esm)["FunctionResponseTypes"])
		// Lambda takes a maximum concurrency or provisioned mode, never both.
		_, hasScaling := props(esm)["ScalingConfig"]
		_, hasPollers := props(esm)["ProvisionedPollerConfig"]
		assert.True(t, hasScaling != hasPollers, "one of ScalingConfig and ProvisionedPollerConfig: %v", props(esm))

		// The worker's reserved concurrency covers the most invocations the
		// event source makes at once: the drain never throttles itself.
		d := def
		d.ApplyDefaults()
		assert.Equal(t, float64(d.ReservedConcurrency), p["ReservedConcurrentExecutions"])
		mc := def.MaxConcurrency
		if pp := def.ProvisionedPollers; pp != nil {
			mc = pp.Maximum * pipeline.PollerInvokes
		}
		assert.GreaterOrEqual(t, p["ReservedConcurrentExecutions"], float64(mc))
	})
}

func TestTopicEncryptedTLSOnly(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		topicID, topic := s.resourceOf(t, "AWS::SNS::Topic", def.Name, "")
		assert.True(t, strings.HasPrefix(flat(props(topic)["KmsMasterKeyId"]), "${"+s.prefix+"SharedAlarmKey"), "topic encrypted with the alarm key")
		ids, rs := s.resources("AWS::SNS::TopicPolicy")
		found, cloudwatch := false, false
		for _, id := range ids {
			p := props(rs[id])
			if !slices.Contains(strs(p["Topics"]), "${Ref:"+topicID+"}") {
				continue
			}
			sts := statements(p["PolicyDocument"])
			found = hasTLSDeny(sts)
			for _, st := range sts {
				if st["Effect"] == "Allow" && flat(st["Principal"]) == `{"Service":"cloudwatch.amazonaws.com"}` {
					cloudwatch = slices.Equal(strs(st["Action"]), []string{"sns:Publish"}) &&
						strings.Contains(flat(st["Condition"].(map[string]any)["ArnLike"].(map[string]any)["aws:SourceArn"]), ":cloudwatch:")
				}
			}
		}
		assert.True(t, found, "topic policy denies requests without TLS")
		assert.True(t, cloudwatch, "topic policy lets this account's CloudWatch alarms publish")
	})
}

// alarmOf finds a pipeline's alarm by its runbook anchor.
func (s *synthesized) alarmOf(t *testing.T, def pipeline.Pipeline, anchor string) map[string]any {
	t.Helper()
	ids, rs := s.resources("AWS::CloudWatch::Alarm")
	for _, id := range ids {
		d := flat(props(rs[id])["AlarmDescription"])
		if strings.HasPrefix(d, "agentdlq "+def.Name+" ["+anchor+"]") {
			return props(rs[id])
		}
	}
	t.Fatalf("no %s alarm for %s", anchor, def.Name)
	return nil
}

func TestAlarms(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		topicID, _ := s.resourceOf(t, "AWS::SNS::Topic", def.Name, "")
		hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		fnID, _ := s.resourceOf(t, "AWS::Lambda::Function", def.Name, "")
		esmID, _ := s.resourceOf(t, "AWS::Lambda::EventSourceMapping", def.Name, "")
		a := def.Alarms
		type want struct {
			namespace, metric, statistic, op string
			threshold                        int
			dim                              string // flattened dimension value
		}
		ge, lt := "GreaterThanOrEqualToThreshold", "LessThanThreshold"
		wants := map[string]want{
			AlarmDLQDepth:        {"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", ge, a.DLQDepth, "${" + dlqID + ".QueueName}"},
			AlarmDLQAge:          {"AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", ge, a.DLQOldestAgeSeconds, "${" + dlqID + ".QueueName}"},
			AlarmExpiryRisk:      {"AgentDLQ", "DLQHoursToExpiry", "Minimum", lt, a.ExpiryRiskHours, def.Name},
			AlarmHotBacklogAge:   {"AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", ge, a.HotOldestAgeSeconds, "${" + hotID + ".QueueName}"},
			AlarmWorkerErrors:    {"AWS/Lambda", "Errors", "Sum", ge, a.WorkerErrors, "${Ref:" + fnID + "}"},
			AlarmWorkerThrottles: {"AWS/Lambda", "Throttles", "Sum", ge, a.WorkerThrottles, "${Ref:" + fnID + "}"},
			AlarmDLQSendFailures: {"AgentDLQ", "DLQSendFailures", "Sum", ge, a.DLQSendFailures, def.Name},
			// The event source mapping's own count, by its UUID (its Ref).
			AlarmESMDroppedEvents: {"AWS/Lambda", "DroppedEventCount", "Sum", ge, a.ESMDroppedEvents, "${Ref:" + esmID + "}"},
		}
		for _, anchor := range AllAlarms() {
			t.Run(anchor, func(t *testing.T) {
				p := s.alarmOf(t, def, anchor)
				desc := flat(p["AlarmDescription"])
				assert.Contains(t, desc, "Run first: ", "says what to run first")
				assert.True(t, strings.HasSuffix(desc, "RUNBOOK.md#"+anchor), "links its runbook section: %s", desc)
				assert.LessOrEqual(t, len(desc), 1024)
				assert.Equal(t, []string{"${Ref:" + topicID + "}"}, strs(p["AlarmActions"]), "alarm action to the pipeline's topic")
				assert.Equal(t, []string{"${Ref:" + topicID + "}"}, strs(p["OKActions"]), "OK action to the pipeline's topic")
				assert.Equal(t, "notBreaching", p["TreatMissingData"])
				if w, ok := wants[anchor]; ok {
					assert.Equal(t, w.namespace, p["Namespace"])
					assert.Equal(t, w.metric, p["MetricName"])
					assert.Equal(t, w.statistic, p["Statistic"])
					assert.Equal(t, w.op, p["ComparisonOperator"])
					assert.Equal(t, float64(w.threshold), p["Threshold"])
					dims := p["Dimensions"].([]any)
					require.Len(t, dims, 1)
					assert.Equal(t, w.dim, flat(dims[0].(map[string]any)["Value"]))
				}
			})
		}
		// Failed events: the mapping's failed over invoked, as a share.
		fe := s.alarmOf(t, def, AlarmESMFailedEvents)
		assert.Equal(t, ge, fe["ComparisonOperator"])
		assert.Equal(t, float64(a.ESMFailedPercent), fe["Threshold"])
		feMetrics := map[string]string{}
		var feExpr string
		for _, m := range fe["Metrics"].([]any) {
			mm := m.(map[string]any)
			if e, ok := mm["Expression"].(string); ok {
				feExpr = e
				continue
			}
			stat := mm["MetricStat"].(map[string]any)["Metric"].(map[string]any)
			dims := stat["Dimensions"].([]any)
			require.Len(t, dims, 1)
			assert.Equal(t, "EventSourceMappingUUID", dims[0].(map[string]any)["Name"])
			assert.Equal(t, "${Ref:"+esmID+"}", flat(dims[0].(map[string]any)["Value"]))
			feMetrics[mm["Id"].(string)] = stat["Namespace"].(string) + "/" + stat["MetricName"].(string)
		}
		assert.Equal(t, "IF(FILL(invoked, 0) > 0, 100 * FILL(failed, 0) / invoked, 0)", feExpr)
		assert.Equal(t, map[string]string{"failed": "AWS/Lambda/FailedInvokeEventCount", "invoked": "AWS/Lambda/InvokedEventCount"}, feMetrics)

		// New dead letters: the worker's DeadLettered and the rise of the DLQ's count.
		p := s.alarmOf(t, def, AlarmNewDeadLetters)
		assert.Equal(t, ge, p["ComparisonOperator"])
		assert.Equal(t, float64(a.NewDeadLetters), p["Threshold"])
		var expr string
		metrics := map[string]string{}
		for _, m := range p["Metrics"].([]any) {
			mm := m.(map[string]any)
			if e, ok := mm["Expression"].(string); ok {
				expr = e
				continue
			}
			stat := mm["MetricStat"].(map[string]any)["Metric"].(map[string]any)
			metrics[mm["Id"].(string)] = stat["Namespace"].(string) + "/" + stat["MetricName"].(string)
		}
		assert.Contains(t, expr, "DIFF(")
		assert.Equal(t, map[string]string{"dl": "AgentDLQ/DeadLettered", "vis": "AWS/SQS/ApproximateNumberOfMessagesVisible",
			"hid": "AWS/SQS/ApproximateNumberOfMessagesNotVisible"}, metrics)

		jsiiCheck(t, "dlq-depth alarm", func() {
			s.assert.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), like(map[string]any{
				"MetricName":         "ApproximateNumberOfMessagesVisible",
				"Statistic":          "Maximum",
				"Threshold":          a.DLQDepth,
				"ComparisonOperator": ge,
				"Dimensions":         []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{dlqID, "QueueName"}}}},
				"AlarmActions":       []any{map[string]any{"Ref": topicID}},
				"OKActions":          []any{map[string]any{"Ref": topicID}},
			}))
		})
	})
}

func TestShared(t *testing.T) {
	require.True(t, fx.synthOK)
	s := fx.stacks[mainStack]
	jsiiCheck(t, "ledger", func() {
		s.assert.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), like(map[string]any{
			"BillingMode":                      "PAY_PER_REQUEST",
			"KeySchema":                        []any{map[string]any{"AttributeName": LedgerPartitionKey, "KeyType": "HASH"}},
			"AttributeDefinitions":             []any{map[string]any{"AttributeName": LedgerPartitionKey, "AttributeType": "S"}},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": LedgerTTLAttribute, "Enabled": true},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"SSESpecification":                 map[string]any{"SSEEnabled": true},
		}))
	})
	jsiiCheck(t, "eval bucket", func() {
		s.assert.HasResourceProperties(jsii.String("AWS::S3::Bucket"), like(map[string]any{
			"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
			"VersioningConfiguration":        map[string]any{"Status": "Enabled"},
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{like(map[string]any{
				"ServerSideEncryptionByDefault": like(map[string]any{"SSEAlgorithm": "aws:kms"}),
			})}},
			"LoggingConfiguration":   like(map[string]any{"LogFilePrefix": "eval-bucket/"}),
			"LifecycleConfiguration": assertions.Match_AnyValue(),
			"ObjectLockEnabled":      true,
		}))
	})
	ids, buckets := s.resources("AWS::S3::Bucket")
	for _, id := range ids {
		p := props(buckets[id])
		assert.NotNil(t, p["BucketEncryption"], "%s encrypted", id)
		assert.NotNil(t, p["LifecycleConfiguration"], "%s has a lifecycle", id)
		assert.Equal(t, "Retain", buckets[id]["DeletionPolicy"], "%s holds evidence: retained", id)
	}
	pids, policies := s.resources("AWS::S3::BucketPolicy")
	require.Len(t, pids, 2)
	for _, id := range pids {
		assert.True(t, hasTLSDeny(statements(props(policies[id])["PolicyDocument"])), "%s TLS only", id)
	}
	// Every key rotates and allows grants only for AWS services.
	kids, keys := s.resources("AWS::KMS::Key")
	for _, id := range kids {
		assert.Equal(t, true, props(keys[id])["EnableKeyRotation"], id)
	}
	// The data key lets CloudWatch Logs encrypt the stack's own log groups
	// only (issue 28: not log-group:*): one statement, on a name prefix.
	var logPrefix string
	for _, id := range kids {
		for _, st := range statements(props(keys[id])["KeyPolicy"]) {
			cond, _ := st["Condition"].(map[string]any)
			arnLike, _ := cond["ArnLike"].(map[string]any)
			arn, ok := arnLike["kms:EncryptionContext:aws:logs:arn"]
			if !ok {
				continue
			}
			require.Empty(t, logPrefix, "one key policy statement lets CloudWatch Logs use a key")
			m := regexp.MustCompile(`:log-group:(/agentdlq/[A-Za-z0-9-]+/)\*$`).FindStringSubmatch(flat(arn))
			require.Len(t, m, 2, "%s: the stack's log groups only: %s", id, flat(arn))
			logPrefix = m[1]
		}
	}
	require.NotEmpty(t, logPrefix)
	// Every log group is encrypted, kept a year, and named under that prefix.
	lids, logs := s.resources("AWS::Logs::LogGroup")
	require.Len(t, lids, len(s.defs)+1)
	for _, id := range lids {
		assert.NotNil(t, props(logs[id])["KmsKeyId"], id)
		assert.Equal(t, float64(365), props(logs[id])["RetentionInDays"], id)
		assert.True(t, strings.HasPrefix(flat(props(logs[id])["LogGroupName"]), logPrefix), "%s: %s", id, flat(props(logs[id])["LogGroupName"]))
	}
}

func TestTriage(t *testing.T) {
	require.True(t, fx.synthOK)
	for _, name := range []string{mainStack, kmsStack} {
		s := fx.stacks[name]
		t.Run(name, func(t *testing.T) {
			// Main: one function; kms: three pipelines, more than one
			// environment holds, packed into two.
			wantFunctions := map[string]int{mainStack: 1, kmsStack: 2}[name]
			ids, fns := s.resources("AWS::Lambda::Function")
			type target struct {
				Pipeline      pipeline.Pipeline `json:"pipeline"`
				HotQueueURL   string            `json:"hot_queue_url"`
				HotQueueARN   string            `json:"hot_queue_arn"`
				DLQURL        string            `json:"dlq_url"`
				DLQARN        string            `json:"dlq_arn"`
				AlarmTopicARN string            `json:"alarm_topic_arn"`
			}
			var targets []target
			functionOf := map[string]string{}
			for _, id := range ids {
				if !strings.HasPrefix(id, "TriageFunction") {
					continue
				}
				p := props(fns[id])
				assert.Equal(t, "provided.al2023", p["Runtime"])
				assert.Equal(t, []any{"arm64"}, p["Architectures"])
				assert.Equal(t, "bootstrap", p["Handler"])
				env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
				assert.Len(t, env, 3)
				assert.True(t, strings.HasPrefix(flat(env["AGENTDLQ_EVAL_BUCKET"]), "${Ref:SharedEvalBucket"))
				assert.True(t, strings.HasPrefix(flat(env["AGENTDLQ_LEDGER_TABLE"]), "${Ref:"+s.prefix+"SharedLedger"))
				var ts []target
				require.NoError(t, json.Unmarshal([]byte(flat(env["AGENTDLQ_TRIAGE_TARGETS"])), &ts))
				require.NotEmpty(t, ts)
				for _, tg := range ts {
					functionOf[tg.Pipeline.Name] = id
				}
				targets = append(targets, ts...)
				wantFunctions--
			}
			assert.Zero(t, wantFunctions, "triage functions")
			require.Len(t, targets, len(s.defs), "every pipeline is in exactly one function's targets")
			sort.Slice(targets, func(i, j int) bool {
				return slices.IndexFunc(s.defs, func(d pipeline.Pipeline) bool { return d.Name == targets[i].Pipeline.Name }) <
					slices.IndexFunc(s.defs, func(d pipeline.Pipeline) bool { return d.Name == targets[j].Pipeline.Name })
			})
			for i, def := range s.defs {
				tg := targets[i]
				fnID := functionOf[def.Name]
				hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
				dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
				topicID, _ := s.resourceOf(t, "AWS::SNS::Topic", def.Name, "")
				assert.Empty(t, cmp.Diff(def, tg.Pipeline, cmpopts.EquateEmpty()))
				assert.Equal(t, "${Ref:"+hotID+"}", tg.HotQueueURL)
				assert.Equal(t, "${"+hotID+".Arn}", tg.HotQueueARN)
				assert.Equal(t, "${Ref:"+dlqID+"}", tg.DLQURL)
				assert.Equal(t, "${"+dlqID+".Arn}", tg.DLQARN)
				assert.Equal(t, "${Ref:"+topicID+"}", tg.AlarmTopicARN)

				// A schedule per pipeline, and a rule on its DLQ alarms.
				jsiiCheck(t, "schedule", func() {
					s.assert.HasResourceProperties(jsii.String("AWS::Events::Rule"), like(map[string]any{
						"ScheduleExpression": rateExpr(def.Triage.ScheduleMinutes),
						"Targets": []any{like(map[string]any{
							"Arn":   map[string]any{"Fn::GetAtt": []any{fnID, "Arn"}},
							"Input": fmt.Sprintf(`{"pipeline":"%s","trigger":"schedule"}`, def.Name),
						})},
					}))
				})
				var alarmARNs []any
				aids, alarms := s.resources("AWS::CloudWatch::Alarm")
				for _, anchor := range dlqAlarms {
					for _, id := range aids {
						if strings.HasPrefix(flat(props(alarms[id])["AlarmDescription"]), "agentdlq "+def.Name+" ["+anchor+"]") {
							alarmARNs = append(alarmARNs, map[string]any{"Fn::GetAtt": []any{id, "Arn"}})
						}
					}
				}
				require.Len(t, alarmARNs, len(dlqAlarms))
				jsiiCheck(t, "alarm rule", func() {
					s.assert.HasResourceProperties(jsii.String("AWS::Events::Rule"), like(map[string]any{
						"EventPattern": map[string]any{
							"source":      []any{"aws.cloudwatch"},
							"detail-type": []any{"CloudWatch Alarm State Change"},
							"resources":   alarmARNs,
							"detail":      map[string]any{"state": map[string]any{"value": []any{"ALARM"}}},
						},
						"Targets": []any{like(map[string]any{
							"Arn": map[string]any{"Fn::GetAtt": []any{fnID, "Arn"}},
							"InputTransformer": like(map[string]any{
								"InputTemplate": assertions.Match_StringLikeRegexp(jsii.String(`"pipeline":"` + def.Name + `".*"trigger":"alarm"`)),
							}),
						})},
					}))
				})
			}
		})
	}
}

func TestDashboard(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		ids, rs := s.resources("AWS::CloudWatch::Dashboard")
		var body string
		for _, id := range ids {
			b := flat(props(rs[id])["DashboardBody"])
			if strings.Contains(b, "agentdlq · "+def.Name+" ") {
				body = b
			}
		}
		require.NotEmpty(t, body, "a dashboard per pipeline")
		var parsed map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &parsed), "the dashboard body is JSON")
		for _, want := range []string{
			"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage", // depth and age
			"${" + hotID + ".QueueName}", "${" + dlqID + ".QueueName}", // of both queues
			`SEARCH('{AgentDLQ,Pipeline,Reason} MetricName=\"DeadLettered\" Pipeline=\"` + def.Name + `\"'`, // dead letters by reason
			"DLQHoursToExpiry", "DLQExpiringSoon", // expiry risk
			`"Errors"`, `"Throttles"`, "DLQSendFailures", // the worker
			"NumberOfMessagesDeleted",                                                                                   // redrive progress
			"PolledEventCount", "InvokedEventCount", "FailedInvokeEventCount", "DroppedEventCount", "DeletedEventCount", // the event source mapping
			"(owner: " + def.Owner + ")", "[RUNBOOK.md](RUNBOOK.md)",
		} {
			assert.Contains(t, body, want)
		}

		// Each queue's age beside its depth, in one graph.
		byTitle := widgets(t, parsed)
		for title, queueID := range map[string]string{GraphHotQueue: hotID, GraphDLQ: dlqID} {
			w, ok := byTitle[title]
			require.True(t, ok, "graph %q", title)
			assert.Contains(t, w, `"ApproximateNumberOfMessagesVisible","QueueName","${`+queueID+`.QueueName}"`, title)
			assert.Contains(t, w, `"ApproximateAgeOfOldestMessage","QueueName","${`+queueID+`.QueueName}"`, title)
		}
		// The event source mapping's own counts, by its UUID.
		esmID, _ := s.resourceOf(t, "AWS::Lambda::EventSourceMapping", def.Name, "")
		esmGraph, ok := byTitle[GraphESM]
		require.True(t, ok, "graph %q", GraphESM)
		for _, name := range []string{"PolledEventCount", "InvokedEventCount", "FailedInvokeEventCount", "DroppedEventCount", "DeletedEventCount"} {
			assert.Contains(t, esmGraph, `"AWS/Lambda","`+name+`","EventSourceMappingUUID","${Ref:`+esmID+`}"`, name)
		}
		// The worker's duration, p50 and p99, against its timeout.
		w := byTitle[GraphWorkerDuration]
		assert.Contains(t, w, `"AWS/Lambda","Duration"`)
		assert.Contains(t, w, `"stat":"p50"`)
		assert.Contains(t, w, `"stat":"p99"`)
		assert.Contains(t, w, fmt.Sprintf(`"value":%d`, def.WorkerTimeoutSeconds*1000))
		// Dead letters by reason: live from the worker, and what the triage
		// counted, which the title says refreshes only when it runs.
		var byReason string
		for title, w := range byTitle {
			if strings.HasPrefix(title, GraphByReason) {
				byReason = title
				assert.Contains(t, w, `MetricName=\"DeadLettered\"`)
				assert.Contains(t, w, `MetricName=\"DLQMessagesByReason\"`)
			}
		}
		assert.Contains(t, byReason, fmt.Sprintf("refreshed when triage runs, every %d min", def.Triage.ScheduleMinutes))
	})
}

// widgets returns each graph of a dashboard body by its title, as JSON.
func widgets(t *testing.T, body map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range body["widgets"].([]any) {
		p, _ := w.(map[string]any)["properties"].(map[string]any)
		title, _ := p["title"].(string)
		if title == "" {
			continue
		}
		b, err := json.Marshal(p)
		require.NoError(t, err)
		out[title] = string(b)
	}
	return out
}

// TestRunbookNamesGraphsThatExist: the graphs RUNBOOK.md sends the reader
// of an alarm to (in *italics*, in a paragraph that speaks of the dashboard)
// are graphs of the dashboard.
func TestRunbookNamesGraphsThatExist(t *testing.T) {
	require.True(t, fx.synthOK)
	data, err := os.ReadFile(filepath.Join(fx.root, "RUNBOOK.md"))
	require.NoError(t, err)
	titles := map[string]bool{}
	for _, title := range []string{GraphHotQueue, GraphDLQ, GraphByReason, GraphExpiryRisk, GraphWorker, GraphWorkerDuration, GraphRedrive, GraphESM, GraphSLOEvents} {
		titles[title] = true
	}
	named := 0
	italic := regexp.MustCompile(`\*([^*]+)\*`)
	bold := regexp.MustCompile(`\*\*[^*]+\*\*`)
	// Paragraphs and list items, each joined into one line.
	for _, block := range regexp.MustCompile(`\n(\s*\n|\s*- |\s*\d+\. )`).Split(string(data), -1) {
		block = bold.ReplaceAllString(strings.Join(strings.Fields(block), " "), "")
		if !strings.Contains(block, "dashboard") {
			continue
		}
		for _, m := range italic.FindAllStringSubmatch(block, -1) {
			named++
			assert.True(t, titles[m[1]], "RUNBOOK.md names the graph %q, which the dashboard does not have", m[1])
		}
	}
	assert.GreaterOrEqual(t, named, 3, "the hot-backlog section names its graphs")
}

// rateExpr is the schedule expression CDK writes for a rate of n minutes.
func rateExpr(n int) string {
	unit := func(v int, one string) string {
		if v == 1 {
			return fmt.Sprintf("rate(1 %s)", one)
		}
		return fmt.Sprintf("rate(%d %ss)", v, one)
	}
	switch {
	case n%1440 == 0:
		return unit(n/1440, "day")
	case n%60 == 0:
		return unit(n/60, "hour")
	default:
		return unit(n, "minute")
	}
}

func TestOutputs(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		hotID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "hot")
		dlqID, _ := s.resourceOf(t, "AWS::SQS::Queue", def.Name, "dlq")
		want := map[string]string{
			"HotQueueUrl":    "${Ref:" + hotID + "}",
			"DLQUrl":         "${Ref:" + dlqID + "}",
			"RedriveRoleArn": "${" + s.roleOf(t, def.Name, "RedriveRole") + ".Arn}",
		}
		outputs := s.tmpl["Outputs"].(map[string]any)
		for suffix, value := range want {
			found := false
			for id, o := range outputs {
				om := o.(map[string]any)
				if strings.Contains(id, suffix) && strings.HasPrefix(fmt.Sprint(om["Description"]), "agentdlq "+def.Name+":") {
					found = true
					assert.Equal(t, value, flat(om["Value"]), id)
				}
			}
			assert.True(t, found, "output %s of %s", suffix, def.Name)
		}
	})
}

// recorder is an errorReporter that keeps what it was told.
type recorder struct{ errors []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestJsiiAssertionPanicBecomesAnError: a failing assertion of the assertions
// package panics across jsii; jsiiCheck turns it into a test error that says
// what did not match, and a passing one reports nothing.
func TestJsiiAssertionPanicBecomesAnError(t *testing.T) {
	require.True(t, fx.synthOK)
	s := fx.stacks[mainStack]
	var r recorder
	jsiiCheck(&r, "wrong maxReceiveCount", func() {
		s.assert.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(map[string]any{
			"RedrivePolicy": like(map[string]any{"maxReceiveCount": 10}),
		}))
	})
	require.Len(t, r.errors, 1)
	assert.Contains(t, r.errors[0], "wrong maxReceiveCount: ")
	assert.Contains(t, r.errors[0], "maxReceiveCount")
	jsiiCheck(&r, "right count", func() { s.assert.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
	assert.Len(t, r.errors, 1, "a passing assertion reports nothing")
}

func TestGoMemLimit(t *testing.T) {
	tests := []struct {
		memoryMB int
		want     string // 90% of it, rounded down, in MiB
	}{
		{128, "115MiB"},
		{512, "460MiB"},
		{1024, "921MiB"},
		{10240, "9216MiB"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, GoMemLimit(tt.memoryMB), "%d MB", tt.memoryMB)
	}
}

func TestGoMaxProcs(t *testing.T) {
	tests := []struct {
		memoryMB int
		want     string // the vCPUs the memory pays for, rounded up
	}{
		{128, "1"},
		{256, "1"},
		{1769, "1"},
		{1770, "2"},
		{3008, "2"},
		{10240, "6"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, GoMaxProcs(tt.memoryMB), "%d MB", tt.memoryMB)
	}
}

// TestAddToAnExistingStack: Add puts one pipeline, the shared parts and the
// triage into a stack the caller already has, beside its own resources,
// without the context that New sets (the access-log bucket used to panic
// there); the stack goes through every check of the others.
func TestAddToAnExistingStack(t *testing.T) {
	require.True(t, fx.synthOK)
	s := fx.stacks[adopterStack]
	for typ, want := range map[string]float64{
		"AWS::DynamoDB::Table":            2, // the team's own and the ledger
		"AWS::SQS::Queue":                 2,
		"AWS::Lambda::EventSourceMapping": 1,
		"AWS::S3::Bucket":                 2,
	} {
		jsiiCheck(t, typ, func() { s.assert.ResourceCountIs(jsii.String(typ), jsii.Number(want)) })
	}
	ids, buckets := s.resources("AWS::S3::Bucket")
	for _, id := range ids {
		assert.True(t, strings.HasPrefix(id, "AgentDLQShared"), "%s is under Add's construct", id)
		assert.NotContains(t, props(buckets[id]), "AccessControl", "%s: no ACL (access logs through the bucket policy)", id)
	}
}

// TestAddRefusesWithErrors: what would panic in CDK is an error of Add.
func TestAddRefusesWithErrors(t *testing.T) {
	require.True(t, fx.synthOK)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\n"), 0o755))
	valid := func() *Props {
		return &Props{Pipelines: fx.file.Pipelines[:1], WorkerAssetDir: dir, TriageAssetDir: dir,
			RedrivePrincipals: map[string]string{fx.file.Pipelines[0].Name: "arn:aws:iam::123456789012:role/oncall"}}
	}
	app := awscdk.NewApp(nil)
	own := awscdk.NewStack(app, jsii.String("Own"), nil)
	awsdynamodb.NewTable(own, jsii.String("Taken"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
	})
	cli := awscdk.NewStack(app, jsii.String("Cli"), &awscdk.StackProps{Synthesizer: awscdk.NewCliCredentialsStackSynthesizer(nil)})
	tests := []struct {
		name  string
		scope constructs.Construct
		id    string
		props *Props
		want  string
	}{
		{"nil props", own, "A", nil, "props are required"},
		{"no scope", nil, "A", valid(), "scope is required"},
		{"an id already taken", own, "Taken", valid(), `already has a construct named "Taken"`},
		{"an empty id", own, " ", valid(), "construct id is required"},
		{"a scope in no stack", app, "A", valid(), "is in no stack"},
		{"a synthesizer without an execution role", cli, "A", valid(), "PipelineProps.DeployRoleARN: is required with a synthesizer other than DefaultStackSynthesizer"},
		{"a redrive principal missing", own, "A", func() *Props { p := valid(); p.RedrivePrincipals = nil; return p }(),
			`pipeline "agent-tasks": Props.RedrivePrincipals: has no redrive principal for this pipeline`},
		{"an account root as redrive principal", own, "A", func() *Props {
			p := valid()
			p.RedrivePrincipals["agent-tasks"] = "arn:aws:iam::123456789012:root"
			return p
		}(), "is not an IAM role or user ARN"},
		{"a bad deploy role", own, "A", func() *Props { p := valid(); p.DeployRoleARN = "deployer"; return p }(),
			`Props.DeployRoleARN: "deployer" is not an IAM role or user ARN`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts *Parts
			var err error
			require.NotPanics(t, func() { parts, err = Add(tt.scope, tt.id, tt.props) })
			require.Error(t, err)
			assert.Nil(t, parts)
			assert.Contains(t, err.Error(), tt.want)
			// An adopter's module has neither this repository's make
			// targets nor its CDK context.
			for _, w := range []string{"make build", "-c ", CtxRedrivePrincipals, CtxDeployRole} {
				assert.NotContains(t, err.Error(), w)
			}
		})
	}
}

// TestBreakerAlarmAndControl: a pipeline with its breaker on has a
// breaker-open alarm on the worker's BreakerOpened count, to its topic and
// linking its runbook section, and its redrive role may write the breaker
// items of the ledger table, their attributes only.
func TestBreakerAlarmAndControl(t *testing.T) {
	require.True(t, fx.synthOK)
	s := fx.stacks[kmsStack]
	var def pipeline.Pipeline
	for _, d := range s.defs {
		if d.Breaker.Enabled {
			def = d
		}
	}
	require.NotEmpty(t, def.Name, "the kms stack has a pipeline with the breaker on")
	found := false
	ids, res := s.resources("AWS::CloudWatch::Alarm")
	for _, id := range ids {
		p, _ := res[id]["Properties"].(map[string]any)
		if p["MetricName"] != "BreakerOpened" {
			continue
		}
		found = true
		assert.Equal(t, "AgentDLQ", p["Namespace"])
		assert.Contains(t, flat(p["Dimensions"]), def.Name)
		assert.True(t, strings.HasSuffix(flat(p["AlarmDescription"]), "RUNBOOK.md#"+AlarmBreakerOpen), flat(p["AlarmDescription"]))
	}
	assert.True(t, found, "no BreakerOpened alarm")
	b, _ := json.Marshal(s.tmpl)
	assert.Contains(t, string(b), `"LedgerBreakers"`)
	assert.Contains(t, string(b), `"breaker:*"`)
}
