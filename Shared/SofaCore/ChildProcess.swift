/// What a Sofa process tells a child process it starts.
public enum ChildProcess {
    /// The environment variable in which a process names itself to a `sofa-js` it starts: the
    /// child ends itself when that process is gone.
    public static let parentVariable = "SOFA_JS_PARENT"
}
