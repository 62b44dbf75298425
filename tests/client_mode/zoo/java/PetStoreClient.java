// The zoo's Java client: Java's own java.net.http.HttpClient with its defaults, as
// HttpClient.newHttpClient() gives it. On an http:// address its default version, HTTP/2, makes
// it offer a cleartext upgrade on its requests (Connection: Upgrade, HTTP2-Settings; Upgrade:
// h2c), which a server may ignore and must then serve as HTTP/1.1 (RFC 9110 section 7.8).
//
// Around it, a careful retry policy and the PETSTORE_* contract of `petstore-conformance
// client`: the operation performed PETSTORE_REPEAT times, each result printed, exit 1 when the
// client gave up. It honours Retry-After in both forms of RFC 9110 section 10.2.3, backs off
// exponentially with jitter without one, gives up after five tries, never repeats a 400 or 401,
// and waits for the X-RateLimit-Reset when told X-RateLimit-Remaining: 0 before it repeats.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

public final class PetStoreClient {
    private static final int TRIES = 5;
    private static final HttpClient CLIENT = HttpClient.newHttpClient();

    public static void main(String[] args) throws Exception {
        int repeat = Integer.parseInt(System.getenv().getOrDefault("PETSTORE_REPEAT", "1"));
        HttpResponse<String> last = null;
        for (int i = 0; i < repeat; i++) {
            if (last != null && last.headers().firstValue("X-RateLimit-Remaining").orElse("").equals("0")) {
                long reset = Long.parseLong(last.headers().firstValue("X-RateLimit-Reset").orElse("0"));
                sleepSeconds(reset - System.currentTimeMillis() / 1000.0);
            }
            last = perform(System.getenv("PETSTORE_OPERATION"));
        }
    }

    private static HttpResponse<String> perform(String operation) throws Exception {
        for (int attempt = 0; ; attempt++) {
            HttpResponse<String> response = CLIENT.send(request(operation), HttpResponse.BodyHandlers.ofString());
            int status = response.statusCode();
            if (status < 400) {
                System.out.println(status + " " + response.body());
                return response;
            }
            if ((status != 429 && status != 503) || attempt == TRIES - 1) {
                String body = response.body();
                System.err.println("gave up after " + (attempt + 1) + " tries: " + status + " "
                        + body.substring(0, Math.min(200, body.length())));
                System.exit(1);
            }
            sleepSeconds(secondsToWait(response.headers().firstValue("Retry-After"), attempt));
        }
    }

    private static HttpRequest request(String operation) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(
                        URI.create(System.getenv("PETSTORE_BASE_URL") + "/categories"))
                .timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + System.getenv("PETSTORE_API_KEY"));
        if (!"createCategory".equals(operation)) {
            return builder.GET().build();
        }
        String name = System.getenv().getOrDefault("PETSTORE_CATEGORY_NAME", "");
        return builder.header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"name\":" + jsonString(name) + "}"))
                .build();
    }

    /** RFC 9110 10.2.3: delay-seconds or an HTTP-date; without it, 1, 2, 4 ... s, +-25 %. */
    private static double secondsToWait(Optional<String> retryAfter, int attempt) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        if (retryAfter.isEmpty()) {
            return Math.pow(2, attempt) * random.nextDouble(0.75, 1.25);
        }
        String value = retryAfter.get().trim();
        if (value.matches("\\d+")) {
            return Long.parseLong(value) + random.nextDouble(0, 0.2);
        }
        try {
            ZonedDateTime when = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME);
            return when.toInstant().toEpochMilli() / 1000.0 - System.currentTimeMillis() / 1000.0 + 0.05;
        } catch (DateTimeParseException unreadable) {
            return Math.pow(2, attempt);
        }
    }

    private static void sleepSeconds(double seconds) throws InterruptedException {
        if (seconds > 0) {
            Thread.sleep((long) Math.ceil(seconds * 1000));
        }
    }

    private static String jsonString(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
