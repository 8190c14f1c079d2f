package io.vgpu.nvidia;

import java.util.Objects;

/**
 * Where the interposer's files live, on the node and in containers, under HAMi's {@code HOOK_PATH}
 * ({@code /usr/local} by default). On the node:
 *
 * <pre>
 * &lt;hook&gt;/vgpu/libvgpu.so                          the interposer ({@link Interposer} installs it)
 * &lt;hook&gt;/vgpu/ld.so.preload                       one line: the interposer's path in containers
 * &lt;hook&gt;/vgpu/containers/&lt;podUID&gt;_&lt;container&gt;   per-container directory, mounted read-write
 *                                               at &lt;hook&gt;/vgpu; holds the shared region vgpu.cache
 * &lt;hook&gt;/vgpu/limits/&lt;podUID&gt;_&lt;container&gt;       the container's limits file, mounted read-only at
 *                                               /etc/vgpu/limits
 * &lt;hook&gt;/vgpu/kai/&lt;podUID&gt;_&lt;container&gt;          under KAI Scheduler: a fraction container's grant
 *                                               directory, mounted read-only at /etc/vgpu; the node
 *                                               agent writes its file limits once the pod is bound
 * </pre>
 *
 * The limits files sit beside the per-container directories, never inside one: those are writable
 * from inside their container, so a file there could be replaced by the process it limits.
 *
 * @param hookPath the absolute {@code HOOK_PATH}, without a trailing slash
 */
public record HookLayout(String hookPath) {
  /** Where every container finds its limits file (libvgpu's fixed path). */
  public static final String CONTAINER_LIMITS_FILE = "/etc/vgpu/limits";
  /** The system-wide preload list inside a container. */
  public static final String CONTAINER_PRELOAD_FILE = "/etc/ld.so.preload";
  /** The interposer's file name. */
  public static final String LIBRARY_NAME = "libvgpu.so";
  /** The limits file's name inside a KAI fraction container's grant directory. */
  public static final String KAI_LIMITS_NAME = "limits";
  /** The shared region's file name inside the per-container directory. */
  public static final String REGION_NAME = "vgpu.cache";

  /** Validates the path. */
  public HookLayout {
    Objects.requireNonNull(hookPath, "hookPath");
    if (!hookPath.startsWith("/") || (hookPath.length() > 1 && hookPath.endsWith("/"))) {
      throw new IllegalArgumentException("HOOK_PATH '" + hookPath + "' must be an absolute path without a trailing slash");
    }
  }

  /** {@code <hook>/vgpu}: on the node the interposer's directory, in a container the per-container directory. */
  public String vgpuDirectory() {
    return (hookPath.equals("/") ? "" : hookPath) + "/vgpu";
  }

  /** {@code <hook>/vgpu/libvgpu.so}, the same path on the node and in containers. */
  public String library() {
    return vgpuDirectory() + "/" + LIBRARY_NAME;
  }

  /** {@code <hook>/vgpu/ld.so.preload} on the node. */
  public String preloadFile() {
    return vgpuDirectory() + "/ld.so.preload";
  }

  /** {@code <hook>/vgpu/containers/<podUID>_<container>} on the node. */
  public String containerDirectory(String podUid, String container) {
    return vgpuDirectory() + "/containers/" + containerKey(podUid, container);
  }

  /** {@code <hook>/vgpu/limits/<podUID>_<container>} on the node. */
  public String limitsFile(String podUid, String container) {
    return vgpuDirectory() + "/limits/" + containerKey(podUid, container);
  }

  /** {@code <hook>/vgpu/vgpu.cache} in a container: the shared region, inside the per-container directory. */
  public String containerRegion() {
    return vgpuDirectory() + "/" + REGION_NAME;
  }

  /** {@code <hook>/vgpu/containers} on the node: the parent of every per-container directory. */
  public String containersDirectory() {
    return vgpuDirectory() + "/containers";
  }

  /** {@code <hook>/vgpu/kai} on the node: the parent of the grant directories of KAI fraction containers. */
  public String kaiGrantsDirectory() {
    return vgpuDirectory() + "/kai";
  }

  /** {@code <hook>/vgpu/kai/<podUID>_<container>} on the node: one KAI fraction container's grant directory. */
  public String kaiGrantDirectory(String podUid, String container) {
    return kaiGrantsDirectory() + "/" + containerKey(podUid, container);
  }

  /** {@code <hook>/vgpu/kai/<podUID>_<container>/limits} on the node: the grant a KAI fraction container's libvgpu.so reads at {@code /etc/vgpu/limits}. */
  public String kaiLimitsFile(String podUid, String container) {
    return kaiGrantDirectory(podUid, container) + "/" + KAI_LIMITS_NAME;
  }

  private static String containerKey(String podUid, String container) {
    requireName("pod UID", podUid);
    requireName("container name", container);
    return podUid + "_" + container;
  }

  private static void requireName(String what, String value) {
    if (value.isEmpty() || value.contains("/") || value.equals(".") || value.equals("..")) {
      throw new IllegalArgumentException(what + " '" + value + "' cannot name a directory");
    }
  }
}
