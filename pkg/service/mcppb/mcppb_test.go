package mcppb_test

import (
	"reflect"
	"testing"
	"time"

	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/config/value"
	"github.com/toold/toold/pkg/mcp/mcpconfig"
	"github.com/toold/toold/pkg/service/mcppb"
)

// An entry survives the trip to the AdminService's message and back.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   mcpconfig.Server
	}{
		{"empty", mcpconfig.Server{}},
		{"stdio", mcpconfig.Server{Command: "node", Args: []string{"s.js"}, Env: map[string]string{"A": "1"}, Cwd: "/tmp"}},
		{"http", mcpconfig.Server{URL: "http://h/mcp", Headers: map[string]string{"X": "y"}, Type: "http", Disabled: true}},
		{"policy", mcpconfig.Server{Command: "x", Toold: mcpconfig.ServerPolicy{Risk: "low",
			ToolRisk:    map[string]string{"a": "high", "b": "medium"},
			IdleTimeout: value.Duration(5 * time.Second), MaxTimeout: value.Duration(time.Minute)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mcppb.ConfigFromPB(mcppb.ConfigToPB(tt.in)); !reflect.DeepEqual(got, tt.in) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tt.in)
			}
		})
	}
}

func TestRisk(t *testing.T) {
	for name, want := range map[string]pb.RiskLevel{"low": pb.RiskLevel_RISK_LEVEL_LOW, "HIGH": pb.RiskLevel_RISK_LEVEL_HIGH,
		"medium": pb.RiskLevel_RISK_LEVEL_MEDIUM, "": pb.RiskLevel_RISK_LEVEL_UNSPECIFIED, "scary": pb.RiskLevel_RISK_LEVEL_UNSPECIFIED} {
		if got := mcppb.RiskToPB(name); got != want {
			t.Errorf("RiskToPB(%q) = %v, want %v", name, got, want)
		}
	}
}
