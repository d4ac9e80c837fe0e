#!/usr/bin/python3
"""A drag source for the desktop smoke test: a small GTK window titled
"sextant-drag-source" whose button drags the folder given as argv[1] as a `text/uri-list`
(what a file manager offers), so that xdotool's pointer moves can drop a folder on the app
under Xvfb. Exits after the drop. Needs Debian's python3-gi and gir1.2-gtk-3.0."""
import pathlib
import sys

import gi

gi.require_version("Gdk", "3.0")
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk  # noqa: E402

uri = pathlib.Path(sys.argv[1]).resolve().as_uri()
win = Gtk.Window(title="sextant-drag-source")
win.set_default_size(160, 120)
win.move(0, 0)
button = Gtk.Button(label="drag me")
button.drag_source_set(
    Gdk.ModifierType.BUTTON1_MASK,
    [Gtk.TargetEntry.new("text/uri-list", 0, 0)],
    Gdk.DragAction.COPY,
)
button.connect("drag-data-get", lambda _w, _c, data, _i, _t: data.set_uris([uri]))
button.connect("drag-end", lambda *_: Gtk.main_quit())
win.add(button)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
