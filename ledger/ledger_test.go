package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/ledger"
)

func TestShortDigest(t *testing.T) {
	t.Parallel()
	full := "jcs-sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	assert.Equal(t, "jcs-sha256:0123456789ab…", ledger.ShortDigest(full))
	assert.Equal(t, "jcs-sha256:0123456789ab", ledger.ShortDigest("jcs-sha256:0123456789ab"), "already short: as it is")
	assert.Equal(t, "", ledger.ShortDigest(""))
}
