"""An n-player Stag Hunt, registered with mesa-dilemmas by entry point."""
