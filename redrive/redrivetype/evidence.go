package redrivetype

// ClaimCheckCause says why a dead letter's claim check did not restore its
// attributes (redrive.SelectResult.ClaimCheckFailedBy, the audit's
// claim_check_failed.<cause> counts).
type ClaimCheckCause string

// The causes of a claim check that restored nothing.
const (
	// ClaimCheckOutsidePrefix: the reference is not s3://<bucket>/<pipeline>/evidence/….
	ClaimCheckOutsidePrefix ClaimCheckCause = "outside_prefix"
	// ClaimCheckNoClient: no S3 client to read it (redrive.Config.Evidence).
	ClaimCheckNoClient ClaimCheckCause = "no_client"
	// ClaimCheckNoBucket: no eval bucket configured (redrive.Config.EvidenceBucket),
	// so no bucket is trusted.
	ClaimCheckNoBucket ClaimCheckCause = "no_bucket"
	// ClaimCheckOtherBucket: the reference is in another bucket than the eval bucket.
	ClaimCheckOtherBucket ClaimCheckCause = "other_bucket"
	// ClaimCheckMissing: there is no such object (or bucket).
	ClaimCheckMissing ClaimCheckCause = "missing"
	// ClaimCheckUnreadable: S3 refused or failed the read.
	ClaimCheckUnreadable ClaimCheckCause = "unreadable"
	// ClaimCheckTooLarge: the object is larger than a claim check can be.
	ClaimCheckTooLarge ClaimCheckCause = "too_large"
	// ClaimCheckNotClaimCheck: the object does not parse as a claim check.
	ClaimCheckNotClaimCheck ClaimCheckCause = "not_a_claim_check"
	// ClaimCheckOtherMessage: the claim check is of another message.
	ClaimCheckOtherMessage ClaimCheckCause = "other_message"
)
