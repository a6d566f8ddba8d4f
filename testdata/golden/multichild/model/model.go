// Package model holds the record types of the multichild golden case.
package model

// Reading is one sensor measurement.
//
//kgen:record
type Reading struct {
	Sensor   string            `json:"sensor"`
	Value    float64           `json:"value"`
	AtMillis int64             `json:"at_ms"`
	Labels   map[string]string `json:"labels,omitempty"`
	Location *Location         `json:"location,omitempty"`
	Raw      []byte            `json:"raw"`
	Ok       bool              `json:"ok"`
	Skipped  string            `json:"-"`
}

// Location is where a sensor is.
type Location struct {
	Lat, Lon float32
}

// Key identifies a sensor in aggregates.
//
//kgen:record
type Key struct {
	Sensor string `avro:"sensor_name"`
}
