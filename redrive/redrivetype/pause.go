package redrivetype

// PauseResult says which mapping was switched and its state afterwards.
type PauseResult struct {
	UUID     string `json:"uuid"`
	Function string `json:"function,omitempty"`
	// State is the mapping's state as Lambda reports it ("Disabling",
	// "Enabling", "Disabled", "Enabled").
	State string `json:"state"`
	// Paused is what was asked: true for pause, false for resume.
	Paused bool `json:"paused"`
}
