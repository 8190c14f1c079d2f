package io.vgpu.examples.lab.kai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.sun.net.httpserver.HttpServer;
import io.vgpu.examples.lab.LabHome;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The probe's {@code reserve} op, KAI's resource-reservation container, run as a process over the mock
 * NVML: exactly one visible card or KAI's error and exit 1; with one, its UUID patched onto its own pod
 * over HTTP with the ServiceAccount token from the standard mount.
 */
class ReserveOpTest {
  private static final String CARD0 = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
  private static final String CARD1 = "GPU-bbbbbbbb-0000-0000-0000-000000000001";

  @TempDir Path dir;

  private Path probe() {
    Path probe = LabHome.locate().nativeDirectory().resolve("vgpu-lab-probe");
    assumeThat(probe).as("vgpu-native's probe (gcc and make)").isRegularFile();
    return probe;
  }

  private Map<String, String> driver(String visible) throws IOException {
    Path machine = dir.resolve("machine");
    Files.writeString(machine, "profile=A100-SXM4-40GB uuid=" + CARD0 + "\nprofile=A100-SXM4-40GB uuid=" + CARD1 + "\n");
    Map<String, String> env = new java.util.LinkedHashMap<>();
    env.put("VGPU_MOCK_CONFIG", machine.toString());
    env.put("VGPU_MOCK_STATE", dir.resolve("state").toString());
    env.put("LD_LIBRARY_PATH", LabHome.locate().nativeDirectory().toString());
    if (visible != null) {
      env.put("VGPU_MOCK_VISIBLE_DEVICES", visible);
    }
    return env;
  }

  private record Exit(int code, String stdout, String stderr) {}

  private Exit run(List<String> command, Map<String, String> env) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().clear();
    pb.environment().putAll(env);
    pb.redirectOutput(dir.resolve("out").toFile()).redirectError(dir.resolve("err").toFile());
    Process p = pb.start();
    // a successful reserve idles afterwards, as KAI's does: its output is complete once it says so
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (p.isAlive() && System.nanoTime() < deadline && !Files.readString(dir.resolve("err")).contains("ops complete")) {
      Thread.sleep(20);
    }
    // A failed op says "ops complete" too, then exits: give it the moment that takes (a successful
    // one idles on, and is still alive after it).
    boolean alive = !p.waitFor(1, TimeUnit.SECONDS);
    p.destroyForcibly().waitFor();
    return new Exit(alive ? -1 : p.exitValue(), Files.readString(dir.resolve("out")), Files.readString(dir.resolve("err")));
  }

  @Test
  void twoVisibleCardsAreKaisErrorAndExitOne() throws Exception {
    Exit exit = run(List.of(probe().toString(), "reserve"), driver(null));
    assertThat(exit.code()).isEqualTo(1);
    assertThat(exit.stderr()).contains("vgpu-lab-probe: Error while running the app: found 2 devices, 1 was expected");
    assertThat(exit.stdout()).isEqualTo("{\"op\":\"reserve\",\"result\":-1}\n");
  }

  @Test
  void withoutTheApiAddressItSaysWhatIsMissing() throws Exception {
    Exit exit = run(List.of(probe().toString(), "reserve"), driver(CARD1));
    assertThat(exit.code()).isEqualTo(1);
    assertThat(exit.stderr()).contains("Error while running the app: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT, POD_NAMESPACE and POD_NAME must be set");
  }

  @Test
  void itPatchesItsOwnPodWithItsCardsUuidAsItsServiceAccount() throws Exception {
    assumeThat(Files.readString(Path.of("/proc/self/status"))).as("a private mount namespace for the token's standard path needs root").containsPattern("Uid:\\s+0\\s");
    List<String> requests = new CopyOnWriteArrayList<>();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI() + " " + exchange.getRequestHeaders().getFirst("Authorization") + " "
          + exchange.getRequestHeaders().getFirst("Content-Type") + " " + body);
      byte[] answer = "{}".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, answer.length);
      exchange.getResponseBody().write(answer);
      exchange.close();
    });
    server.start();
    try {
      Path secrets = Files.createDirectories(dir.resolve("sa"));
      Files.writeString(secrets.resolve("token"), "the-token\n");
      Map<String, String> env = driver(CARD1);
      env.put("KUBERNETES_SERVICE_HOST", "127.0.0.1");
      env.put("KUBERNETES_SERVICE_PORT", Integer.toString(server.getAddress().getPort()));
      env.put("POD_NAMESPACE", "kai-resource-reservation");
      env.put("POD_NAME", "gpu-reservation-0123456789abcdef");
      env.put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
      String mount = "/var/run/secrets/kubernetes.io/serviceaccount";
      List<String> command = new ArrayList<>(List.of("unshare", "--mount", "sh", "-c",
          "mkdir -p " + mount + " && mount --bind " + secrets + " " + mount + " && exec " + probe() + " reserve"));
      Exit exit = run(command, env);
      assertThat(exit.stdout()).isEqualTo("{\"op\":\"reserve\",\"result\":0,\"uuid\":\"" + CARD1 + "\"}\n");
      assertThat(exit.code()).as("it idles after reporting, as KAI's does").isEqualTo(-1);
      assertThat(requests).containsExactly("PATCH /api/v1/namespaces/kai-resource-reservation/pods/gpu-reservation-0123456789abcdef Bearer the-token "
          + "application/merge-patch+json {\"metadata\":{\"annotations\":{\"run.ai/reserve_for_gpu_index\":\"" + CARD1 + "\"}}}");
    } finally {
      server.stop(0);
    }
  }
}
