package spec

// blueGreen checks a blue/green strategy at p: something marked, its
// switch, its checks and its delay.
func (v *validator) blueGreen(p string, b *BlueGreen) {
	v.anyMarked(p, "blueGreen")
	v.router(p+".switch", b.Switch.Component, "input", b.Switch.Input, "the router's variable that selects the active color, e.g. input: active_color")
	v.healthChecks(p+".previewChecks", b.PreviewChecks, v.markedOwner())
	v.healthChecks(p+".postSwitchChecks", b.PostSwitchChecks, v.markedOwner())
	v.duration(p+".scaleDownDelay", b.ScaleDownDelay, maxPause)
}
