package config

import "errors"

// validateAcross checks what involves more than one section (each section
// checks itself).
func (c *Config) validateAcross() error {
	if c.History.Backend == "postgres" && c.History.DSN == "" && c.Memory.DSN == "" {
		return errors.New("history.backend postgres needs history.dsn (or memory.dsn)")
	}
	return nil
}
