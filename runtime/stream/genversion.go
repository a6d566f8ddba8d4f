package stream

// The range of generated-code contract versions this runtime supports.
// Generated code carries one number, the contract version it was written
// for, and compiles only when MinGenVersion <= that number <= MaxGenVersion
// (the guard protobuf-go's protoimpl uses). A runtime change that keeps
// older generated code working raises MaxGenVersion and leaves
// MinGenVersion, so existing generated code keeps compiling;
// raising MinGenVersion is the breaking change, and says so.
const (
	MinGenVersion = 2
	MaxGenVersion = 2
)
