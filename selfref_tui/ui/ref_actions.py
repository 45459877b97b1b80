"""Copying and exporting what the transcript highlights, mixed into the app.

ctrl+r copies the highlighted message, code block or ref (a ref as an export
writes it); ctrl+s and ``/export`` write a ref to a file through the export
dialog, asking before an existing file is overwritten; ctrl+s on a highlighted
image writes its bytes the same way; ``/save`` writes the whole conversation
(context/conversation_export.py) through the same dialog.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work

from selfref_tui.agent.chat.controller import Refused
from selfref_tui.safety import inert_line, name_line
from selfref_tui.ui.transcript.image import ImageItem

#: a conversation's export, made once its file is chosen: the text, and the files beside it
Render = Callable[[Path], Awaitable[tuple[str, list[tuple[Path, bytes]]]]]

if TYPE_CHECKING:
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.ui.widgets.transcript import Transcript


class RefActions:
    """ctrl+r, ctrl+s and ``/export``."""

    if TYPE_CHECKING:  # what the app provides
        controller: ChatController
        transcript: Transcript

        def notify(self, message: str, **kwargs: Any) -> None: ...
        def copy_to_clipboard(self, text: str) -> None: ...
        async def push_screen_wait(self, screen: Any) -> Any: ...

    #: where the last export went: the export dialog starts there
    _last_export_dir: Path | None = None

    def action_copy_ref(self) -> None:
        target = self.transcript.target()
        if target is None:
            self.notify("Nothing to copy yet.", severity="warning")
            return
        if not hasattr(target, "ref_id"):  # a message or a code block: its text as shown
            text = target.copy_text
            self.copy_to_clipboard(text)
            self.notify(
                f"Sent {len(text)} characters to the terminal's clipboard "
                "(OSC 52; F1 says what the terminal must allow).",
                markup=False,
            )
            return
        block = target
        from selfref_tui.refs.export import export_plan

        # The same text an export writes: a ref that is one code fence copies as code.
        text = export_plan(block.ref_id, block.text_so_far).content
        self.copy_to_clipboard(text)
        # The app cannot know whether the terminal honoured the OSC 52 request (tmux
        # without set-clipboard drops it), so it says what it did, not "Copied".
        self.notify(
            inert_line(
                f"Sent ref:{block.ref_id} ({len(text)} characters) to the terminal's clipboard "
                "(OSC 52; F1 says what the terminal must allow)."
            ),
            markup=False,
        )

    def action_export_ref(self) -> None:
        highlighted = self.transcript.highlighted
        if isinstance(highlighted, ImageItem):
            self.export_image(highlighted)
            return
        if highlighted is not None and not hasattr(highlighted, "ref_id"):
            # A code block, a message, an answer…: what is highlighted, as ctrl+r copies
            # it — never some other ref further up.
            self.export_text(highlighted)
            return
        block = self.transcript.target_ref()
        if block is None:
            self.notify("No ref to export yet.", severity="warning")
            return
        if not block.closed:
            self.notify(
                f"ref:{block.ref_id} is not finished; only complete refs can be exported.",
                severity="warning",
            )
            return
        self.export_ref(block.ref_id, block.content or "", None)

    def export_ref_by_id(self, ref_id: str, path: str | None) -> None:
        ref_id = ref_id.removeprefix("ref:")
        content = self.controller.ref_content(ref_id)
        if content is None:
            self.notify(f"No ref {ref_id!r} in this conversation.", severity="warning")
            return
        self.export_ref(ref_id, content, path)

    @work(exclusive=True, group="export")
    async def export_ref(self, ref_id: str, content: str, path: str | None) -> None:
        """Dialog → existing file? overwrite/append/cancel → write → notify the full path.

        A failed write re-opens the dialog with the typed path and the error,
        so nothing typed is lost; the next export starts in the folder used last.
        """
        from selfref_tui.refs.export import export_plan

        plan = export_plan(ref_id, content)
        await self._export_file(ref_id, f"ref:{ref_id}", plan.suggested_name, plan.content,
                                plan.content, path)

    @work(exclusive=True, group="export")
    async def export_text(self, target: Any, path: str | None = None) -> None:
        """A highlighted code block (as its code, named by its language), message or
        answer (``.md`` when it reads like Markdown) through the same dialog."""
        from selfref_tui.refs.export import EXTENSIONS, looks_like_markdown
        from selfref_tui.ui.transcript.answer import Fence

        text = target.copy_text
        if isinstance(target, Fence):
            what, name = "code block", "code" + EXTENSIONS.get(target.lang.lower(), ".txt")
            text += "\n"
        else:
            what = {"user": "message", "tool": "tool call"}.get(target.kind, target.kind)
            name = what.replace(" ", "-") + (".md" if looks_like_markdown(text) else ".txt")
        await self._export_file("", what, name, text, text, path)

    @work(exclusive=True, group="export")
    async def export_image(self, image: ImageItem, path: str | None = None) -> None:
        """The image's bytes, as they came, to a file (the same dialog and path rules; an
        existing file may be overwritten, never appended to)."""
        await self._export_file("", "image", image.suggested_name, image.title, image.data,
                                path)

    @work(exclusive=True, group="export")
    async def save_conversation(self, path: str | None = None) -> None:
        """``/save [PATH]``: the whole conversation as Markdown (``.json``: as JSON), its
        images beside it, through the same dialog, path rules and overwrite question."""
        from selfref_tui.context.conversation_export import suggested_name

        controller = self.controller
        try:
            count = controller.conversation_size()
        except Refused as exc:
            self.notify(str(exc), severity=exc.severity)
            return
        fmt = "json" if path and path.strip().lower().endswith(".json") else "md"
        key = controller.key
        preview = (f"{count} message{'s' if count != 1 else ''} of {name_line(key, 60)}, as "
                   "Markdown (a path ending .json: as JSON); images go beside it")

        async def render(target: Path) -> tuple[str, list[tuple[Path, bytes]]]:
            return await controller.export_conversation(key, target)

        await self._export_file("", "conversation", suggested_name(key, fmt), preview, "", path,
                                render=render)

    async def _export_file(self, ref_id: str, what: str, suggested_name: str, preview: str,
                           data: str | bytes, path: str | None, *,
                           render: Render | None = None) -> None:
        """``render``: the text is made once the file is chosen (a conversation's Markdown
        links its images by the file's name), with files to write beside it; it is
        written whole (no append)."""
        from selfref_tui.selfref.export_beside import write_beside
        from selfref_tui.selfref.export_path import export_target, is_file, link_note
        from selfref_tui.selfref.file_walk import FileWriteError
        from selfref_tui.selfref.files import refuse_read_only, write_file
        from selfref_tui.ui.screens.export_dialog import ExportDialog
        from selfref_tui.ui.screens.overwrite_prompt import OverwritePrompt

        typed = path
        error = ""
        folder = self._last_export_dir or Path.cwd()
        text = isinstance(data, str) and render is None
        while True:
            if typed is None or error:
                typed = await self.push_screen_wait(
                    ExportDialog(
                        ref_id,
                        typed or str(folder / suggested_name),
                        preview=preview,
                        error=error,
                        suggested_name=suggested_name,
                        title=f"Export {what}",
                    )
                )
                if not typed:
                    return
            try:
                target = export_target(typed, suggested_name)
            except ValueError as exc:
                error = str(exc)
                continue
            mode = "write"
            try:
                note = link_note(target)
            except OSError as exc:  # a link to a path that cannot be looked at: as the write
                error = f"Cannot use {target}: {exc.strerror or exc}; choose another path"
                continue
            try:  # refused whatever the answer: not asked about
                refuse_read_only(target, str(target))
            except FileWriteError as exc:
                error = str(exc)
                continue
            if is_file(target) or note:
                mode = await self.push_screen_wait(OverwritePrompt(
                    str(target), append=text and is_file(target), link_note=note))
                if mode not in ("overwrite", "append"):
                    self.notify("Export cancelled.")
                    return
                mode = "write" if mode == "overwrite" else "append"
            try:
                beside: list[tuple[Path, bytes]] = []
                if render is not None:
                    data, beside = await render(target)
                write_beside(beside)  # first: a folder refused leaves the file unwritten
                written = write_file(target, data, mode=mode, roots=None, separate=True)
            except Refused as exc:
                self.notify(str(exc), severity=exc.severity)
                return
            except Exception as exc:  # the writer's message names the file and the cause
                message = str(exc)
                error = message[:1].upper() + message[1:]
                continue
            break
        resolved = Path(written).resolve()
        self._last_export_dir = resolved.parent
        verb = "Appended" if mode == "append" else "Wrote"
        images = f" and {len(beside)} image{'s' if len(beside) != 1 else ''} beside it" \
            if beside else ""
        self.notify(inert_line(f"{verb} {what} to {resolved}{images}"), timeout=6, markup=False)
