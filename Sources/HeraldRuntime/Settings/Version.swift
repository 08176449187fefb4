public enum HeraldVersion {
    public static let current = "0.2.0"
}
