package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// LedgerPartitionKey and LedgerTTLAttribute are the ledger table's key and
// TTL attribute (ledger's DynamoDB implementation writes them).
const (
	LedgerPartitionKey = "pk"
	LedgerTTLAttribute = "expires_at"
)

// Shared holds the parts of a stack that every pipeline uses.
type Shared struct {
	constructs.Construct
	// Ledger is the idempotency ledger: on demand, TTL on expires_at,
	// point-in-time recovery, encrypted with the AWS-managed DynamoDB key.
	Ledger awsdynamodb.Table
	// EvalBucket holds triage reports and eval exports under <pipeline>/, and
	// redrive audit records under <pipeline>/audit/.
	EvalBucket awss3.Bucket
	// AccessLogs receives the eval bucket's server access logs.
	AccessLogs awss3.Bucket
	// AlarmKey encrypts the alarm topics; CloudWatch may use it to publish.
	AlarmKey awskms.Key
	// DataKey encrypts the eval bucket and the Lambdas' log groups.
	DataKey awskms.Key
}

// NewShared creates, under scope (in any stack), the ledger, the eval bucket
// with its access-log bucket, and the keys of the alarm topics and of the
// data. The ledger, the buckets and the keys are retained when the stack is
// deleted: they hold evidence (effect receipts, evals, audit). A scope in no
// stack or an id already taken is an error.
func NewShared(scope constructs.Construct, id string) (shared *Shared, err error) {
	if err := checkScope(scope, id, true); err != nil {
		return nil, err
	}
	defer func() {
		if recoverInto(&err, "agentdlq shared parts "+id, recover()) {
			shared = nil
		}
	}()
	s := &Shared{Construct: constructs.NewConstruct(scope, jsii.String(id))}
	// The eval bucket's access logs are delivered under a bucket policy, with
	// ACLs disabled on the log bucket (BucketOwnerEnforced), whatever the
	// app's feature flags say: the flag is set on this construct, before it
	// has children, so that it holds in any stack.
	s.Construct.Node().SetContext(jsii.String("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"), true)
	s.Ledger = awsdynamodb.NewTable(s.Construct, jsii.String("Ledger"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(LedgerPartitionKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(LedgerTTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:    awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})

	s.DataKey = awskms.NewKey(s.Construct, jsii.String("DataKey"), &awskms.KeyProps{
		Description:       jsii.String("agentdlq eval bucket and Lambda log groups"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	stack := awscdk.Stack_Of(s.Construct)
	s.DataKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchLogsEncryptsTheLogGroupsOfThisStack"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("logs."+*awscdk.Aws_REGION()+".amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"ArnLike": map[string]any{"kms:EncryptionContext:aws:logs:arn": stack.FormatArn(&awscdk.ArnComponents{
			// The stack's own log groups only (LogGroupPrefix), not
			// log-group:* (any log group of the account could use the key).
			Service: jsii.String("logs"), Resource: jsii.String("log-group"), ResourceName: jsii.String(LogGroupPrefix(s.Construct) + "*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})}},
	}), nil)
	denyForeignGrants(s.DataKey)

	s.AccessLogs = awss3.NewBucket(s.Construct, jsii.String("AccessLogs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		// Server access logging delivers to SSE-S3 buckets only.
		Encryption:      awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership: awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:       jsii.Bool(true),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("expire-access-logs"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(365)),
			NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(30)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	// cdk-nag counts a server-access-log target bucket as compliant with S1.

	s.EvalBucket = awss3.NewBucket(s.Construct, jsii.String("EvalBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		Encryption:        awss3.BucketEncryption_KMS,
		EncryptionKey:     s.DataKey,
		BucketKeyEnabled:  jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(true),
		// Object Lock is enabled without a default retention: nothing is
		// locked by default, and audit records can be locked per object.
		ObjectLockEnabled:      jsii.Bool(true),
		ServerAccessLogsBucket: s.AccessLogs,
		ServerAccessLogsPrefix: jsii.String("eval-bucket/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("eval-data-to-infrequent-access"),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
			NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(90)),
			Transitions: &[]*awss3.Transition{{
				StorageClass:    awss3.StorageClass_INFREQUENT_ACCESS(),
				TransitionAfter: awscdk.Duration_Days(jsii.Number(90)),
			}},
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})

	s.AlarmKey = awskms.NewKey(s.Construct, jsii.String("AlarmKey"), &awskms.KeyProps{
		Description:       jsii.String("agentdlq alarm topics"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	// CloudWatch alarms publish to a KMS-encrypted topic only when the key
	// lets the cloudwatch service principal use it (AWS-managed aws/sns does not).
	s.AlarmKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublishToEncryptedTopics"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()}},
	}), nil)
	denyForeignGrants(s.AlarmKey)
	awscdk.NewCfnOutput(s.Construct, jsii.String("EvalBucketName"), &awscdk.CfnOutputProps{
		Value:       s.EvalBucket.BucketName(),
		Description: jsii.String("agentdlq eval bucket: triage reports and evals under <pipeline>/, redrive audit under <pipeline>/audit/ (--audit s3://<this bucket>)"),
	})
	awscdk.NewCfnOutput(s.Construct, jsii.String("LedgerTableName"), &awscdk.CfnOutputProps{
		Value:       s.Ledger.TableName(),
		Description: jsii.String("agentdlq idempotency ledger table"),
	})
	return s, nil
}

// denyForeignGrants adds the key-policy statement of Control Tower's
// CT.KMS.PR.3: grants on the key may be created for AWS services only.
func denyForeignGrants(key awskms.Key) {
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("GrantsOnlyForAWSServices"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("kms:CreateGrant"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"BoolIfExists": map[string]any{"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"}},
	}), nil)
}

// LogGroupPrefix is the name prefix of the log groups the stack's
// constructs create (the workers' and the triage's):
// /agentdlq/<stack name>/. The shared data key lets CloudWatch Logs use it
// for log groups under that prefix only.
func LogGroupPrefix(scope constructs.Construct) string {
	return "/agentdlq/" + *awscdk.Stack_Of(scope).StackName() + "/"
}
