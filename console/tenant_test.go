package console

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPipelinePageByTenant: the pipeline page breaks the DLQ down by
// tenant (the report's Tenants) and states the dead-letter SLO.
func TestPipelinePageByTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 70) // seven tenants, ten letters each
	require.Len(t, f.r.Tenants, 7)
	w := f.get(t, "/pipeline?p=agent-tasks")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	page := w.Body.String()
	assert.Contains(t, page, `<h2 id="tenants">By tenant</h2>`)
	for _, tn := range f.r.Tenants {
		assert.Contains(t, page, tn.Tenant)
	}
	assert.Contains(t, page, `id="slo"`)
	assert.Contains(t, page, "SLO 99.9 % of tasks not dead-lettered")
	assert.NotContains(t, page, "dominates", "no tenant holds more than half")
}
