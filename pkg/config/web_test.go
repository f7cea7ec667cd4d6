package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toold/toold/pkg/config"
)

func TestWebAndNetworkConfig(t *testing.T) {
	for _, c := range []struct {
		yaml    string
		wantErr string
		check   func(config.Config) bool
	}{
		{"terminal: {network: proxy}", "", func(c config.Config) bool { return c.Terminal.Network.Proxy && !c.Terminal.Network.Off }},
		{"terminal: {network: false}", "", func(c config.Config) bool { return c.Terminal.Network.Off }},
		{"terminal: {network: true}", "", func(c config.Config) bool { return !c.Terminal.Network.Off && !c.Terminal.Network.Proxy }},
		{"terminal: {network: sometimes}", "want true, false or proxy", nil},
		{"web: {search: {provider: searxng, url: 'http://127.0.0.1:8888/'}}", "", func(c config.Config) bool { return c.Web.Search.Provider == "searxng" }},
		{"web: {search: {provider: brave, api_key_env: BRAVE_KEY}}", "", func(c config.Config) bool { return c.Web.Search.APIKeyEnv == "BRAVE_KEY" }},
		{"web: {search: {provider: brave}}", "web.search.api_key_env", nil},
		{"web: {search: {provider: google}}", "unknown provider", nil},
		{"web: {search: {provider: searxng}}", "web.search.url", nil},
		{"web: {search: {provider: tavily, api_key_env: K, token: x}}", "token", nil},
	} {
		p := filepath.Join(t.TempDir(), "toold.yaml")
		os.WriteFile(p, []byte(c.yaml), 0o600)
		cfg, err := config.Load(p)
		if err == nil {
			err = cfg.Validate()
		}
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want an error with %q", c.yaml, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", c.yaml, err)
		case !c.check(cfg):
			t.Errorf("%s: %+v %+v", c.yaml, cfg.Terminal.Network, cfg.Web)
		}
	}
}
