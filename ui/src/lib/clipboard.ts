// Copying text: the async clipboard where the page may use it, else a selected textarea.
export async function copyText(text: string): Promise<boolean> {
  (globalThis as any).__lastCopied = text;
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}
