public enum HeraldVersion {
    public static let current = "0.1.0"
}
