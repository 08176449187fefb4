public enum HeraldVersion {
    public static let current = "0.3.2"
}
