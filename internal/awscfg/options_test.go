package awscfg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
)

// sharedConfig points the SDK at a temporary shared config file with two
// profiles and clears what else would choose a profile or a region.
func sharedConfig(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config")
	credFile := filepath.Join(dir, "credentials")
	if err := os.WriteFile(cfgFile, []byte("[default]\nregion = us-east-1\n\n[profile oncall]\nregion = eu-west-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(credFile, []byte("[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = x\n\n[oncall]\naws_access_key_id = AKIDONCALL\naws_secret_access_key = y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", cfgFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credFile)
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadAppliesProfileAndRegionFromContext(t *testing.T) {
	sharedConfig(t)
	ctx := context.Background()
	tests := []struct {
		name       string
		o          Options
		env        map[string]string
		region, id string
	}{
		{name: "defaults", region: "us-east-1", id: "AKIDDEFAULT"},
		{name: "profile", o: Options{Profile: "oncall"}, region: "eu-west-3", id: "AKIDONCALL"},
		{name: "profile and region", o: Options{Profile: "oncall", Region: "ap-south-1"}, region: "ap-south-1", id: "AKIDONCALL"},
		{name: "region alone", o: Options{Region: "sa-east-1"}, region: "sa-east-1", id: "AKIDDEFAULT"},
		{name: "flags win over the environment", o: Options{Profile: "oncall", Region: "eu-north-1"},
			env: map[string]string{"AWS_PROFILE": "default", "AWS_REGION": "us-west-2"}, region: "eu-north-1", id: "AKIDONCALL"},
		{name: "environment without flags", env: map[string]string{"AWS_PROFILE": "oncall"}, region: "eu-west-3", id: "AKIDONCALL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := Load(WithOptions(ctx, tt.o))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != tt.region {
				t.Errorf("region %q, want %q", cfg.Region, tt.region)
			}
			creds, err := cfg.Credentials.Retrieve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if creds.AccessKeyID != tt.id {
				t.Errorf("access key %q, want %q (the profile's)", creds.AccessKeyID, tt.id)
			}
		})
	}
}

func TestLoadUnknownProfileIsAnError(t *testing.T) {
	sharedConfig(t)
	_, err := Load(WithOptions(context.Background(), Options{Profile: "nope"}))
	var pe config.SharedConfigProfileNotExistError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v, want a SharedConfigProfileNotExistError", err)
	}
}
