package tools

import "encoding/json"

// FlatVerdict returns a function that decodes argument text as a call's is
// decoded (DecodeArguments: the flat decoder, then the general path and
// its repairs) and reports whether schema's flat form accepts it, and the
// compiled schema's own verdict (nil: valid); decodeErr is
// DecodeArguments' error. hasFlat says whether the schema has a flat form.
func FlatVerdict(schema json.RawMessage) (hasFlat bool, verdict func(args string) (flatAccepts bool, libErr, decodeErr error), err error) {
	c, err := parseSchema("t.t", schema)
	if err != nil {
		return false, nil, err
	}
	s, err := c.compiled()
	if err != nil {
		return false, nil, err
	}
	return c.flat != nil, func(args string) (bool, error, error) {
		m, err := DecodeArguments(args)
		if err != nil {
			return false, nil, err
		}
		delete(m, repairsKey)
		return c.flat != nil && c.flat.accepts(m), s.Validate(any(m)), nil
	}, nil
}
